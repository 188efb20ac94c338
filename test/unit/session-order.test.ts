import { describe, expect, it } from "vitest";
import { SessionOrder } from "../../src/sessions/registry/session-order.ts";
import type { Session } from "../../src/sessions/session/index.ts";

const at = (ms: number, id: string) => ({ id, createdAt: new Date(ms) }) as Session;
const ids = (sessions: Iterable<Session>) => [...sessions].map((s) => s.id);

describe("SessionOrder: the registry's sessions in list order", () => {
	it("keeps oldest first, then by id, whatever order they come in, and pages from a position", () => {
		const order = new SessionOrder();
		const sessions = [at(30, "c"), at(10, "b"), at(20, "a"), at(10, "a"), at(30, "a"), at(5, "z")];
		for (const s of sessions) order.add(s);
		expect(ids(order.after())).toEqual(["z", "a", "b", "a", "a", "c"]);
		expect([...order.after()].map((s) => s.createdAt.getTime())).toEqual([5, 10, 10, 20, 30, 30]);
		// Strictly past the position: the cursor's own session is not on the next page.
		expect(ids(order.after(10, "a"))).toEqual(["b", "a", "a", "c"]);
		expect(ids(order.after(10, "b"))).toEqual(["a", "a", "c"]);
		// A position between sessions (one since deleted) starts at the next one.
		expect(ids(order.after(25, "x"))).toEqual(["a", "c"]);
		expect(ids(order.after(30, "c"))).toEqual([]);
	});

	it("removes exactly the session given, also one that shares another's time", () => {
		const order = new SessionOrder();
		const [a, b, c] = [at(10, "a"), at(10, "b"), at(20, "c")];
		for (const s of [a, b, c]) order.add(s);
		order.remove(b);
		expect(ids(order.after())).toEqual(["a", "c"]);
		order.remove(b); // twice: nothing else goes
		expect(ids(order.after())).toEqual(["a", "c"]);
		order.remove(a);
		order.remove(c);
		expect(ids(order.after())).toEqual([]);
	});

	it("matches a sort of every session, over many random adds and removes", () => {
		const order = new SessionOrder();
		const held = new Set<Session>();
		let seed = 7;
		const random = () => {
			seed = (seed * 1103515245 + 12345) % 2 ** 31;
			return seed / 2 ** 31;
		};
		for (let i = 0; i < 2000; i++) {
			if (held.size > 0 && random() < 0.4) {
				const victim = [...held][Math.floor(random() * held.size)] as Session;
				held.delete(victim);
				order.remove(victim);
			} else {
				const s = at(Math.floor(random() * 50), `s${Math.floor(random() * 1e6)}`);
				held.add(s);
				order.add(s);
			}
		}
		const sorted = [...held].sort(
			(x, y) => x.createdAt.getTime() - y.createdAt.getTime() || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0),
		);
		expect([...order.after()]).toEqual(sorted);
	});
});
