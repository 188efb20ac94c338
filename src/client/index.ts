/**
 * pi-gateway's TypeScript client (`import { PiGateway } from "pi-gateway/client"`): typed from
 * openapi.yaml, streams as async iterators that resume with Last-Event-ID, an approvals helper,
 * problem+json errors as GatewayError, AbortSignal everywhere. No dependencies beyond fetch.
 */
export { AllEventsStream, type HubEvent } from "./all-events.ts";
export { type Approval, type ApprovalAnswer, Approvals, type NextApprovalOptions } from "./approvals.ts";
export { type EventsOptions, type ListSessionsOptions, PiGateway } from "./client.ts";
export { GatewayError, type Problem, RunLostError, StreamInterruptedError } from "./errors.ts";
export type { ClientOptions, ReconnectOptions } from "./http.ts";
export type { components, operations, paths } from "./schema.ts";
export { FrameTooLarge, LineParser, parseSse, type SseFrame, type SseParserOptions } from "./sse.ts";
export { EventStream } from "./streams.ts";
export {
	type ListToolCallsOptions,
	type RunWithToolsOptions,
	type ToolCall,
	type ToolCallAnswer,
	ToolCalls,
	type ToolHandler,
	type ToolOutput,
} from "./tool-calls.ts";
export type {
	EventOf,
	EventType,
	Method,
	PathsOf,
	RequestOptions,
	ResponseData,
	Schemas,
	StreamEvent,
} from "./types.ts";
export { Workspace } from "./workspace.ts";
