/**
 * Runs: the budget, limits, structured output, results, the supervisor that ties them to a command,
 * and the run service (accept, wait, stream, held by a dialog; spans a resumed stream replays). The room's one door.
 */

export { reportedUsage } from "../events/usage.ts";
export { BudgetView, SessionBudget } from "../session/budget.ts";
export type { RunCommand } from "./run-accept.ts";
export { type CancelAnswer, cancelRun } from "./run-cancel.ts";
export { LimitHit } from "./run-limits.ts";
export { warmSchemaChecks } from "./run-output.ts";
export { type PreparedRun, prepareRun, type RunAnswer } from "./run-service.ts";
export { type RunSpan, spanAt } from "./run-spans.ts";
export { type CommandStreamSink, streamCommandEvents } from "./run-stream.ts";
export { runControlFields } from "./run-supervisor.ts";
