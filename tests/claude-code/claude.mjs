// Claude Code itself (the agent SDK's bundled cli.js) with the loopback
// preload. The adapter starts Claude Code through the SDK, which removes
// NODE_OPTIONS from Claude Code's environment; the helper points
// CLAUDE_CODE_EXECUTABLE here (a `.mjs` path, so the SDK runs it with the
// adapter's node), and this loads preload.js, puts it back in NODE_OPTIONS
// for the node programs Claude Code starts, and runs cli.js with the same
// arguments. Installed beside node_modules by setup.sh.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const preload = fileURLToPath(new URL("./preload.js", import.meta.url));
createRequire(import.meta.url)(preload);
process.env.NODE_OPTIONS = `--require ${JSON.stringify(preload)}`;
await import("./node_modules/@anthropic-ai/claude-agent-sdk/cli.js");
