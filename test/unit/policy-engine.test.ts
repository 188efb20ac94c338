import { DatabaseSync } from "node:sqlite";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { type PolicyRule, PolicySet } from "../../src/sessions/dialogs/policies.ts";
import { PolicyEngine } from "../../src/sessions/dialogs/policy-engine.ts";
import { SqliteRulesStore } from "../../src/store/sqlite/session-rules.ts";

// Issue 20, governance: the operator's rules come before anything a session brings, so an
// operator's `ask` or `deny` holds against a session's `{"match": {}, "action": "allow"}`.
const rule = (name: string, action: PolicyRule["action"]): PolicyRule => ({ name, match: {}, action });

function engine(operator: PolicyRule[], session: PolicyRule[]) {
	const host = {
		subscribeAll: () => () => {},
		list: () => [],
		policiesOf: (id: string) => (id === "s1" ? PolicySet.parse({ rules: session }) : undefined),
	};
	return new PolicyEngine(
		PolicySet.parse({ rules: operator }),
		host,
		new SqliteRulesStore(new DatabaseSync(":memory:")),
		pino({ level: "silent" }),
	);
}

describe("the order rules are tried in", () => {
	it("the operator's first, then the session's remembered answers, then the session's own", () => {
		const policies = engine([rule("operator-ask", "ask")], [rule("session-allow", "allow")]);
		policies.preload("s1", [rule("remembered-1", "deny")]);
		expect(policies.rules("s1").map((r) => r.name)).toEqual(["operator-ask", "remembered-1", "session-allow"]);
		expect(policies.rules("other").map((r) => r.name)).toEqual(["operator-ask"]);
	});
});
