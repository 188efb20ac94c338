/** Dialogs that wait on someone: approvals and their history, client tool calls, approval policies. The room's one door. */

export { ApprovalHistory, type ApprovalHistoryQuery, type ApprovalHistoryStore } from "./approval-history.ts";
export { Approval, ApprovalAnswer, ApprovalStatus, approvalExample, pageOf } from "./approvals.ts";
export { ToolCall, ToolCallAnswer, ToolCallStatus } from "./client-tool-calls.ts";
export { approvingRules, type PolicyRule, PolicySet } from "./policies.ts";
export { loadPolicyFile, PolicyEngine, type RulesStore } from "./policy-engine.ts";
