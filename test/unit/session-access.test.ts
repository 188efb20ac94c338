import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import { SessionAccess } from "../../src/sessions/registry/access.ts";
import { SqliteAccessStore } from "../../src/store/sqlite/access.ts";

describe("SessionAccess", () => {
	it("owners and shares outlive the object (a gateway restart reads them back from gateway.db)", () => {
		const db = new DatabaseSync(":memory:");
		const first = new SessionAccess(new SqliteAccessStore(db));
		first.setOwner("ses_a", "alice");
		first.share("ses_a", [{ principal: "carol", can: ["answer"] }]);
		first.setOwner("ses_gone", "bob");
		first.forget("ses_gone");
		const again = new SessionAccess(new SqliteAccessStore(db));
		expect(again.get("ses_a")).toEqual({
			sessionId: "ses_a",
			owner: "alice",
			grants: [{ principal: "carol", can: ["answer"] }],
		});
		expect([...again.rights("ses_a", "alice")].sort()).toEqual(["answer", "read", "write"]);
		expect([...again.rights("ses_a", "carol")]).toEqual(["answer"]);
		expect(again.rights("ses_a", "bob").size).toBe(0);
		// Unknown (or pre-principal) sessions belong to the admin.
		expect(again.get("ses_gone").owner).toBe("admin");
		db.close();
	});

	it("write includes read", () => {
		const access = new SessionAccess();
		access.setOwner("s", "alice");
		access.share("s", [{ principal: "bob", can: ["write"] }]);
		expect([...access.rights("s", "bob")].sort()).toEqual(["read", "write"]);
	});
});
