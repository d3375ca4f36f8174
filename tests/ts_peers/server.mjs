// A small MCP server built with the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4),
// used as a real peer by mcptrace's sweep. It offers the same surface as the Python SDK fixture
// server (fixtures/sdk/server.py), so the Python fixture client's scripted session runs against
// both unchanged and their captures compare.
//
//     node server.mjs                      # stdio (serveStdio: the first request picks the era)
//     node server.mjs --http --port 0      # Streamable HTTP (createMcpHandler: modern per request,
//                                          # stateless legacy fallback); prints "listening on URL"
//
// Run it from .ci/node (tests/ts_peers/__init__.py copies it there): bare imports resolve from
// .ci/node/node_modules, which stays out of git.

import http from 'node:http';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

import {
    McpServer, ResourceTemplate, acceptedContent, createMcpHandler, inputRequired, localhostAllowedOrigins, originValidationResponse,
    hostHeaderValidationResponse, localhostAllowedHostnames
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { toNodeHandler } from '@modelcontextprotocol/node';
import * as z from 'zod';

const GREETING_URI = 'fixture://static/greeting';
const GREETING_TEXT = 'Hello from the mcptrace fixture server.\n';

// How a tool-list change reaches clients: HTTP serves each request from a fresh instance, so a change
// is published on the handler's event bus (its open subscriptions/listen streams); stdio keeps one
// instance per connection, which announces it itself.
let toolsChanged = server => server.sendToolListChanged();

function build() {
    const server = new McpServer({ name: 'mcptrace-ts-fixture', version: '1.0.0' },
                                 { capabilities: { logging: {} } });
    server.registerTool('echo', {
        description: 'Return the text unchanged (and log one info line).',
        inputSchema: z.object({ text: z.string() })
    }, async ({ text }, ctx) => {
        await ctx.mcpReq.log('info', `echo called with ${text.length} characters`, 'fixture');
        return { content: [{ type: 'text', text }] };
    });
    server.registerTool('add', {
        description: 'Add two integers.',
        inputSchema: z.object({ a: z.number().int(), b: z.number().int() })
    }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
    server.registerTool('fail', {
        description: 'Always fails: the result has isError true.',
        inputSchema: z.object({ reason: z.string().default('requested failure') })
    }, async ({ reason }) => ({ content: [{ type: 'text', text: `fail tool: ${reason}` }], isError: true }));
    server.registerTool('slow', {
        description: 'Count to `steps`, reporting progress at each step, one pause between steps; cancellable.',
        inputSchema: z.object({ steps: z.number().int(), step_seconds: z.number().optional() })
    }, async ({ steps, step_seconds }, ctx) => {
        const token = ctx.mcpReq._meta?.progressToken;
        for (let i = 1; i <= steps; i++) {
            // Step 1 at once, the pause after it: a client cancelling at the first progress leaves
            // nothing racing its cancel (the aborted sleep throws and the call ends unanswered).
            if (i > 1) await sleep((step_seconds ?? 0.05) * 1000, undefined, { signal: ctx.mcpReq.signal });
            if (token !== undefined) {
                await ctx.mcpReq.notify({ method: 'notifications/progress',
                                          params: { progressToken: token, progress: i, total: steps,
                                                    message: `step ${i}/${steps}` } });
            }
        }
        return { content: [{ type: 'text', text: `done after ${steps} steps` }] };
    });
    server.registerTool('weather', {
        description: 'A fixed forecast, returned as structured content.',
        inputSchema: z.object({ city: z.string() }),
        outputSchema: z.object({ city: z.string(), celsius: z.number(), sky: z.string() })
    }, async ({ city }) => {
        const out = { city, celsius: 21.5, sky: 'clear' };
        return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
    });
    server.registerResource('greeting', GREETING_URI,
                            { description: 'A static text resource.', mimeType: 'text/plain' },
                            async uri => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: GREETING_TEXT }] }));
    server.registerResource('item', new ResourceTemplate('fixture://items/{item_id}', { list: undefined }),
                            { description: 'One item by id.', mimeType: 'text/plain' },
                            async (uri, { item_id }) => ({
                                contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${item_id}` }]
                            }));
    server.registerPrompt('review', {
        description: 'Ask for a review of some code.',
        argsSchema: z.object({ code: z.string(), language: z.string().optional() })
    }, ({ code, language }) => ({
        messages: [{ role: 'user', content: { type: 'text',
                                              text: `Please review this ${language ?? 'python'} code:\n${code}` } }]
    }));
    server.registerTool('confirm', {
        description: 'Ask the user to confirm an action (2026-07-28: input_required; 2025: elicitation/create).',
        inputSchema: z.object({ action: z.string() })
    }, async ({ action }, ctx) => {
        const schema = z.object({ confirm: z.boolean() });
        let yes;
        if (ctx.mcpReq.envelope) {  // a modern request: multi-round-trip, the client retries with the answer
            const got = acceptedContent(ctx.mcpReq.inputResponses, 'confirm', schema);
            if (got === undefined) {
                return inputRequired({ inputRequests: {
                    confirm: inputRequired.elicit({ message: `Confirm ${action}?`, requestedSchema: schema }) } });
            }
            yes = got.confirm;
        } else {
            const r = await ctx.mcpReq.elicitInput({ message: `Confirm ${action}?`, requestedSchema: {
                type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] } });
            yes = r.action === 'accept' && r.content?.confirm === true;
        }
        return { content: [{ type: 'text', text: `${yes ? 'confirmed' : 'declined'} ${action}` }] };
    });
    server.registerTool('grow', {
        description: 'Announce that the tool list changed (notifications/tools/list_changed).',
        inputSchema: z.object({})
    }, async () => {
        toolsChanged(server);
        return { content: [{ type: 'text', text: 'announced' }] };
    });
    return server;
}

function serveHttp(port) {
    const handler = createMcpHandler(() => build(), { onerror: e => process.stderr.write(`${e}\n`) });
    toolsChanged = () => handler.notify.toolsChanged();
    // The SDK's entry is validation-free; its documentation puts Host and Origin checks in front
    // (DNS-rebinding protection): a foreign Origin gets 403.
    const web = { fetch: req => Promise.resolve(
        hostHeaderValidationResponse(req, localhostAllowedHostnames())
        ?? originValidationResponse(req, localhostAllowedOrigins()) ?? handler.fetch(req)) };
    const node = toNodeHandler(web);
    const srv = http.createServer((req, res) => {
        if (!req.url.startsWith('/mcp')) { res.writeHead(404).end(); return; }
        node(req, res);
    });
    srv.listen(port, '127.0.0.1', () => {
        process.stdout.write(`listening on http://127.0.0.1:${srv.address().port}/mcp\n`);
    });
    // (open SSE streams would hold close() forever: a stopped server drops them)
    const stop = () => { srv.closeAllConnections(); srv.close(() => process.exit(0)); };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}

const argv = process.argv.slice(2);
if (argv.includes('--http')) {
    const i = argv.indexOf('--port');
    serveHttp(i >= 0 ? Number(argv[i + 1]) : 8765);
} else {
    serveStdio(() => build(), { onerror: e => process.stderr.write(`${e}\n`) });
}
