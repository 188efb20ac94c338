import { chownSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createKey, revokeKeys } from "../../src/http/auth/keys.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-gateway-keys-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// `sudo pi-gateway keys create --data-dir /var/lib/pi-gateway` under systemd's DynamicUser: a keys
// file of root's, mode 0600, was one the gateway could not read, so every key in it was a 401.
describe.skipIf(process.getuid?.() !== 0)("the keys file written as root", () => {
	it("belongs to the data dir's owner when new, and keeps its owner when rewritten", () => {
		const data = join(dir, "data");
		mkdirSync(data, { mode: 0o700 });
		chownSync(data, 65534, 65534);
		const file = join(data, "keys.json");
		createKey(file, "alice", ["sessions:read"]);
		expect(statSync(file)).toMatchObject({ uid: 65534, gid: 65534 });
		expect(statSync(file).mode & 0o777).toBe(0o600);
		createKey(file, "bob", ["sessions:read"]);
		revokeKeys(file, "alice");
		expect(statSync(file)).toMatchObject({ uid: 65534, gid: 65534 });
	});

	it("stays root's in a folder of root's", () => {
		const file = join(dir, "keys.json");
		createKey(file, "carol", ["sessions:read"]);
		expect(statSync(file).uid).toBe(0);
	});
});
