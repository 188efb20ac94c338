/** Runs: the budget, limits, structured output, results and the supervisor that ties them to a command. The room's one door. */

export { BudgetView, SessionBudget } from "./budget.ts";
export { LimitHit } from "./run-limits.ts";
export { RunCollector, RunWatch, responseId } from "./run-result.ts";
export { type RunControls, runControlFields, superviseRun } from "./run-supervisor.ts";
export { reportedUsage } from "./usage.ts";
