// Preloaded into benchmark nodes (NODE_OPTIONS="--expose-gc --require …"): SIGUSR2 runs a full
// garbage collection, so a heap figure read right after counts what is kept, not garbage.
process.on("SIGUSR2", () => globalThis.gc?.());
