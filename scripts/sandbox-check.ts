// Whether the sandbox every pi runs in holds on this machine (the probe the gateway makes at start):
// exit 0 when it does; else the reason on stderr and exit 1. scripts/setup.sh asks it before and
// after installing bubblewrap, so README's first command ends sandboxed or says what to run.
import { probeSandbox } from "../src/sessions/process/sandbox.ts";

const status = probeSandbox();
if (!status.enabled) {
	console.error(`pi-gateway: the sandbox does not hold here: ${status.reason}`);
	process.exit(1);
}
