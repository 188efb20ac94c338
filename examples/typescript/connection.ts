/**
 * Where every TypeScript example finds the gateway: PI_GATEWAY_URL (default http://127.0.0.1:8787)
 * and PI_GATEWAY_TOKEN, or when that is unset the token file the gateway writes at start,
 * $PI_GATEWAY_DATA_DIR/token (default ~/.pi-gateway/token) — so an example run beside `npm start`
 * needs no variable at all.
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const baseUrl = process.env.PI_GATEWAY_URL ?? "http://127.0.0.1:8787";
export const token = process.env.PI_GATEWAY_TOKEN ?? readTokenFile();

function readTokenFile(): string | undefined {
	const file = join(process.env.PI_GATEWAY_DATA_DIR ?? join(homedir(), ".pi-gateway"), "token");
	try {
		return readFileSync(file, "utf8").trim();
	} catch {
		return undefined;
	}
}
