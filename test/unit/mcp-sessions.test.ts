import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { McpSessions } from "../../src/http/routes/mcp/mcp-sessions.ts";
import { GatewayError } from "../../src/shared/errors.ts";

// The MCP session table (Mcp-Session-Id): bound to the principal that opened each session, held in
// fair shares, idle sessions ended (DESIGN "Fair shares"; docs/mcp.md).
class Fake {
	closed = false;
	async close() {
		this.closed = true;
	}
}

let table: McpSessions<Fake>;
const open = (principal: string) => table.open(principal, () => new Fake());
/** A request that keeps the session busy until it is let go. */
function hold(id: string) {
	let release = () => {};
	const done = table.using(id, () => new Promise<void>((r) => (release = r)));
	return async () => {
		release();
		await done;
	};
}

beforeEach(() => {
	vi.useFakeTimers();
	table = new McpSessions<Fake>({ max: 6, share: 2, idleMs: 60_000 });
});
afterEach(() => vi.useRealTimers());

describe("McpSessions", () => {
	it("a session is its opener's: to another principal its id is unknown", () => {
		const { id, session } = open("alice");
		expect(id).toMatch(/^mcp_[\w-]{24}$/);
		expect(table.get(id, "alice")).toBe(session);
		expect(table.get(id, "bob")).toBeUndefined();
		expect(table.get(id, "admin")).toBeUndefined();
	});

	it("at its share a principal gives up its own least recently used idle session, never another's", () => {
		const a1 = open("alice");
		vi.advanceTimersByTime(10);
		const a2 = open("alice");
		const b1 = open("bob");
		vi.advanceTimersByTime(10);
		table.get(a1.id, "alice");
		const a3 = open("alice");
		expect(a2.session.closed).toBe(true);
		expect(table.get(a2.id, "alice")).toBeUndefined();
		expect([a1, a3].map((a) => table.get(a.id, "alice"))).toEqual([a1.session, a3.session]);
		expect(table.get(b1.id, "bob")).toBe(b1.session);
	});

	it("a busy session is never ended for room: past the share with none idle, 429", async () => {
		const a1 = open("alice");
		const a2 = open("alice");
		const releases = [hold(a1.id), hold(a2.id)];
		const refused = (() => {
			try {
				open("alice");
			} catch (error) {
				return error;
			}
		})();
		expect(refused).toBeInstanceOf(GatewayError);
		expect(refused).toMatchObject({ status: 429, code: "mcp_sessions_limit" });
		expect(open("bob").session.closed).toBe(false);
		await releases[1]?.();
		open("alice");
		expect(a2.session.closed).toBe(true);
		expect(a1.session.closed).toBe(false);
	});

	it("past the cap, the principal that holds the most gives up its idlest session", () => {
		const big = new McpSessions<Fake>({ max: 3, share: 2, idleMs: 60_000 });
		const admin = [1, 2, 3].map(() => big.open("admin", () => new Fake()));
		expect(admin.every((a) => !a.session.closed)).toBe(true);
		const bob = big.open("bob", () => new Fake());
		expect(admin[0]?.session.closed).toBe(true);
		expect(big.size).toBe(3);
		expect(big.get(bob.id, "bob")).toBe(bob.session);
	});

	it("a session no request reached for idleMs ends; a busy one does not", async () => {
		const idle = open("alice");
		const busy = open("bob");
		const release = hold(busy.id);
		vi.advanceTimersByTime(60_000);
		expect(idle.session.closed).toBe(true);
		expect(table.get(idle.id, "alice")).toBeUndefined();
		expect(busy.session.closed).toBe(false);
		await release();
		vi.advanceTimersByTime(60_000);
		expect(busy.session.closed).toBe(true);
		// Nothing left: no timer left either.
		expect(table.size).toBe(0);
		expect(vi.getTimerCount()).toBe(0);
	});
});
