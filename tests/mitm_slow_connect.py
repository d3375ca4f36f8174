"""A mitmdump addon (`-s`): the first server connection takes DELAY_S to set up, as on a loaded
machine or towards a distant server. mitmproxy's HAR then gives that entry a `connect` longer than
the exchange itself (it made the connection before the request came: its eager strategy).

    mitmdump -s tests/mitm_slow_connect.py ...
"""

import asyncio
import time

DELAY_S = 0.5  # longer than an exchange and the client's next request on loopback


class SlowFirstConnect:
    def __init__(self) -> None:
        self.slowed = False

    def server_connect(self, data) -> None:
        # (the hook runs just before mitmproxy notes when the set-up starts: the event loop, held
        # once it waits for the connection, sets it up late, as a loaded machine's does)
        if not self.slowed:
            self.slowed = True
            asyncio.get_running_loop().call_soon(time.sleep, DELAY_S)


addons = [SlowFirstConnect()]
