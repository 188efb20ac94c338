import { describe, expect, it } from "vitest";
import type { OpenAIResponse } from "../../src/http/routes/openai/responses.schemas.ts";
import {
	keptCharsPerPrincipal,
	keptPerPrincipal,
	ResponseStore,
} from "../../src/http/routes/openai/responses.store.ts";

const response = (id: string) => ({ id, status: "completed" }) as OpenAIResponse;

// The responses GET/cancel/DELETE read are one store for every principal: one principal making
// many responses must forget only its own, and no principal reads another's by id.
describe("ResponseStore", () => {
	it("evicts a principal's oldest responses only, never another principal's", () => {
		const store = new ResponseStore();
		store.save("alice", response("resp_alice"));
		for (let i = 0; i <= keptPerPrincipal; i++) store.save("bob", response(`resp_bob_${i}`));
		expect(store.get("alice", "resp_alice")?.response.id).toBe("resp_alice");
		expect(store.get("bob", "resp_bob_0")).toBeUndefined();
		expect(store.get("bob", `resp_bob_${keptPerPrincipal}`)).toBeDefined();
	});

	it("answers a response to its own principal only", () => {
		const store = new ResponseStore();
		store.save("alice", response("resp_1"));
		expect(store.get("bob", "resp_1")).toBeUndefined();
		expect(store.delete("bob", "resp_1")).toBe(false);
		expect(store.get("alice", "resp_1")).toBeDefined();
	});

	it("does not bring back a response deleted while its background run went on", () => {
		const store = new ResponseStore();
		store.save("alice", response("resp_1"), { cancel() {}, ended: Promise.resolve() });
		store.delete("alice", "resp_1");
		store.update("alice", { ...response("resp_1"), status: "cancelled" });
		expect(store.get("alice", "resp_1")).toBeUndefined();
	});
});

describe("ResponseStore's bound on size", () => {
	const large = (id: string) =>
		({ id, status: "completed", output_text: "x".repeat(4 * 1024 * 1024) }) as OpenAIResponse;

	it("keeps a principal's responses within keptCharsPerPrincipal, dropping its own oldest", () => {
		const store = new ResponseStore();
		store.save("alice", large("resp_alice"));
		for (let i = 0; i < 12; i++) store.save("bob", large(`resp_bob_${i}`));
		expect(store.get("alice", "resp_alice")).toBeDefined();
		const kept = Array.from({ length: 12 }, (_, i) => store.get("bob", `resp_bob_${i}`)).filter(Boolean);
		expect(kept.length * 4 * 1024 * 1024).toBeLessThanOrEqual(keptCharsPerPrincipal);
		expect(store.get("bob", "resp_bob_11")).toBeDefined();
		expect(store.get("bob", "resp_bob_0")).toBeUndefined();
	});

	it("never drops a response whose background run still goes", () => {
		const store = new ResponseStore();
		store.save("bob", large("resp_running"), { cancel() {}, ended: new Promise(() => {}) });
		for (let i = 0; i < 12; i++) store.save("bob", large(`resp_bob_${i}`));
		expect(store.get("bob", "resp_running")).toBeDefined();
	});
});
