// A scripted MCP client built with the official TypeScript SDK v2 (@modelcontextprotocol/client 2.4),
// used as a real peer by mcptrace's sweep. It runs the same session as the Python SDK fixture
// client (fixtures/sdk/client.py) against a server with the fixture surface (fixtures/sdk/server.py
// or tests/ts_peers/server.mjs), prints one JSON line per operation and exits 0 when every
// operation gave what it should.
//
//     node client.mjs --mode legacy|auto|modern -- COMMAND ARGS...   # stdio: the SDK spawns it
//     node client.mjs --mode legacy|auto|modern --url URL            # Streamable HTTP
//     node client.mjs --script list ...     # any server: list and ping only (server-everything)
//
// Modes are the SDK's versionNegotiation: legacy (the default: plain 2025 initialize), auto
// (server/discover probe, fallback to initialize; on stdio the probe runs on a second, discarded
// server process), modern ({pin: '2026-07-28'}: discover must offer it, no fallback).
// Run it from .ci/node (tests/ts_peers/__init__.py copies it there) so bare imports resolve.

import process from 'node:process';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const MODES = { legacy: 'legacy', auto: 'auto', modern: { pin: '2026-07-28' } };
const LOG_LEVEL_KEY = 'io.modelcontextprotocol/logLevel';
const SLOW_STEPS = 3;
// The cancelled call: step 1 at once, then a long pause the cancel interrupts (no race on the wire).
const CANCEL_ARGS = { steps: 5, step_seconds: 60 };

function parse(argv) {
    const dd = argv.indexOf('--');
    const command = dd >= 0 ? argv.slice(dd + 1) : [];
    const opts = dd >= 0 ? argv.slice(0, dd) : argv;
    const get = name => (opts.indexOf(name) >= 0 ? opts[opts.indexOf(name) + 1] : undefined);
    const mode = get('--mode') ?? 'legacy';
    const url = get('--url');
    const script = get('--script') ?? 'fixture';
    if (!(mode in MODES) || !(script in SCRIPTS) || Boolean(url) === Boolean(command.length)) {
        process.stderr.write('usage: client.mjs --mode legacy|auto|modern [--script fixture|list] '
                             + '(--url URL | -- COMMAND ARGS...)\n');
        process.exit(2);
    }
    return { mode, url, command, script };
}

function clean(v) {
    // `_meta` carries per-run stamps: left out so runs compare across transports.
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === 'object') {
        return Object.fromEntries(Object.entries(v).filter(([k]) => k !== '_meta').map(([k, x]) => [k, clean(x)]));
    }
    return v;
}

let ok = true;
let overHttp = false;
const emit = (op, fields) => process.stdout.write(JSON.stringify({ op, ...clean(fields) }) + '\n');
const expect = (cond, what) => {
    if (!cond) {
        ok = false;
        process.stderr.write(`client: unexpected result: ${what}\n`);
    }
};

async function session(c, modern) {
    emit('connect', { protocol_version: c.getNegotiatedProtocolVersion(), era: c.getProtocolEra() });
    const logs = [];
    c.setNotificationHandler('notifications/message', n => logs.push(n.params));
    const logMeta = modern ? { _meta: { [LOG_LEVEL_KEY]: 'info' } } : {};
    if (!modern) {
        await c.setLoggingLevel('info');
        emit('set_logging_level', { level: 'info' });
    }
    // Modern era: a subscriptions/listen stream, open for the whole session, closed at its end (the
    // SDK cancels it); on stdio the acknowledgement and later notifications carry its id.
    const sub = modern ? await c.listen({ toolsListChanged: true, resourceSubscriptions: ['fixture://static/greeting'] })
                       : undefined;
    if (sub) emit('listen', { honored: sub.honoredFilter });
    const tools = (await c.listTools()).tools.map(t => t.name).sort();
    emit('list_tools', { tools });
    emit('list_resources', { resources: (await c.listResources()).resources.map(r => r.uri).sort() });
    emit('list_resource_templates', {
        templates: (await c.listResourceTemplates()).resourceTemplates.map(t => t.uriTemplate).sort()
    });
    emit('list_prompts', { prompts: (await c.listPrompts()).prompts.map(p => p.name).sort() });

    const call = async (name, args, wantError, extra = {}) => {
        const result = await c.callTool({ name, arguments: args, ...extra });
        expect(Boolean(result.isError) === wantError, `${name}: isError=${result.isError}`);
        emit('call_tool', { name, arguments: args, result });
        return result;
    };
    await call('echo', { text: 'hello mcptrace' }, false, logMeta);
    emit('logs', { messages: logs });
    expect(logs.length === 1, `one log message from echo, got ${JSON.stringify(logs)}`);
    await call('add', { a: 2, b: 3 }, false);
    await call('fail', { reason: 'on purpose' }, true);
    await call('weather', { city: 'Lyon' }, false);
    for (const uri of ['fixture://static/greeting', 'fixture://items/42']) {
        emit('read_resource', { uri, result: await c.readResource({ uri }) });
    }
    emit('get_prompt', { name: 'review',
                         result: await c.getPrompt({ name: 'review', arguments: { code: 'print(1)', language: 'python' } }) });

    const seen = [];
    const slow = await c.callTool({ name: 'slow', arguments: { steps: SLOW_STEPS } },
                                  { onprogress: p => seen.push(p) });
    // At least one: the SDK 2.4 client may drop the last progress when the result follows it
    // within a millisecond (seen against its own server on stdio; all were on the wire, in order).
    expect(seen.length >= 1 && seen.length <= SLOW_STEPS, `1..${SLOW_STEPS} progress notifications, got ${seen.length}`);
    emit('call_tool_progress', { name: 'slow', progress: seen, result: slow });

    // Cancel a long call at its first progress: the SDK sends notifications/cancelled.
    const abort = new AbortController();
    const pending = c.callTool({ name: 'slow', arguments: CANCEL_ARGS },
                               { signal: abort.signal, onprogress: () => abort.abort('cancelled by the script') });
    const outcome = await pending.then(() => 'finished', e => (abort.signal.aborted ? 'cancelled' : `error ${e}`));
    expect(outcome === 'cancelled', `the slow call was cancelled, got ${outcome}`);
    emit('cancel_tool', { name: 'slow', cancelled: outcome === 'cancelled' });
    // The session must still work after a cancellation.
    await call('add', { a: 40, b: 2 }, false);
    // (not over stateless legacy HTTP: each request meets a fresh server instance that never saw the
    // initialize declaring elicitation, and answers "Client does not support form elicitation.")
    if (tools.includes('confirm') && (modern || !overHttp)) {
        const r = await call('confirm', { action: 'deploy' }, false);
        expect(r.content?.[0]?.text === 'confirmed deploy', `confirm: ${JSON.stringify(r.content)}`);
    }
    // The TS server's change announcement: on the listen stream (modern) or unsolicited (legacy;
    // not over stateless legacy HTTP, which has no stream for it: the GET is refused with 405).
    if (tools.includes('grow') && (modern || !overHttp)) {
        const changed = new Promise(resolve => c.setNotificationHandler('notifications/tools/list_changed',
                                                                         () => resolve(true)));
        await call('grow', {}, false);
        const bound = new Promise(resolve => setTimeout(() => resolve(false), 10_000).unref());
        const seen = await Promise.race([changed, bound]);
        expect(seen, 'notifications/tools/list_changed after grow');
        emit('tools_list_changed', { seen });
    }
    if (sub) {
        await sub.close();
        emit('listen_closed', { how: await sub.closed });
    }
}

async function listing(c) {
    // What every server answers, whatever its tools: the era negotiation is what is under test.
    emit('connect', { protocol_version: c.getNegotiatedProtocolVersion(), era: c.getProtocolEra() });
    emit('ping', { result: await c.ping() });
    emit('list_tools', { tools: (await c.listTools()).tools.map(t => t.name).sort() });
    emit('list_resources', { resources: (await c.listResources()).resources.map(r => r.uri).sort() });
    emit('list_prompts', { prompts: (await c.listPrompts()).prompts.map(p => p.name).sort() });
}

const SCRIPTS = { fixture: session, list: listing };

async function main() {
    const { mode, url, command, script } = parse(process.argv.slice(2));
    overHttp = Boolean(url);
    const client = new Client({ name: 'mcptrace-ts-fixture-client', version: '1.0.0' },
                              { versionNegotiation: { mode: MODES[mode] }, capabilities: { elicitation: { form: {} } } });
    // The user always confirms (2025: answers elicitation/create; 2026-07-28: the SDK fulfils the
    // input_required result with this handler and retries the call).
    client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }));
    const transport = url
        ? new StreamableHTTPClientTransport(new URL(url))
        : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: 'inherit' });
    await client.connect(transport);
    try {
        await SCRIPTS[script](client, client.getProtocolEra() === 'modern');
    } finally {
        await client.close();
    }
    return ok ? 0 : 1;
}

main().then(code => process.exit(code), e => {
    process.stderr.write(`client: ${e?.stack ?? e}\n`);
    process.exit(1);
});
