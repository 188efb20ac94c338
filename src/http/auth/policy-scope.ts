import { approvingRules, type PolicySet } from "../../sessions/dialogs/index.ts";
import { ApiError } from "../transport/problem.ts";
import { hasScope, type Principal } from "./principals.ts";

/**
 * A session rule that approves (`allow`, `{value}`) answers dialogs for its creator, so creating one
 * takes the scope that answering takes: without approvals:answer a principal could approve
 * everything with `{"match": {}, "action": "allow"}`. Refused outright (403) rather than kept
 * inert, so nobody believes in a rule that would never fire. Rules that deny, cancel or ask only
 * hold the agent back and stay open to any creator.
 */
export function assertMayApproveByPolicy(principal: Principal | undefined, policies: PolicySet | undefined): void {
	if (!principal || hasScope(principal, "approvals:answer")) return;
	const approving = approvingRules(policies);
	if (approving.length === 0) return;
	throw new ApiError(
		403,
		"insufficient_scope",
		`Policy rules that approve dialogs (${approving.join(", ")}) need the scope approvals:answer; deny, cancel and ask need none`,
	);
}
