import type { components } from "../../src/client/schema.ts";

/** The public API's shapes, from openapi.yaml (`npm run spec` regenerates src/client/schema.ts, the one generated copy). */
type S = components["schemas"];
export type Session = S["Session"];
export type SessionStatus = S["SessionStatus"];
export type Approval = S["Approval"];
export type ApprovalAnswer = S["ApprovalAnswer"];
export type ApprovalList = S["ApprovalList"];
export type SessionList = S["SessionList"];
export type CreateSession = S["CreateSession"];
export type StreamTicket = S["StreamTicket"];
export type UiState = S["UiState"];
export type Info = S["Info"];
export type Whoami = S["Whoami"];
export type Scope = Whoami["scopes"][number];
export type Models = S["Models"];
export type ThinkingLevels = S["ThinkingLevels"];
export type WorkspaceListing = S["WorkspaceListing"];
export type WorkspaceEntry = S["WorkspaceEntry"];
export type WorkspaceChanges = S["WorkspaceChanges"];
export type WorkspaceFileChange = S["WorkspaceFileChange"];
export type Problem = S["Problem"];
export type ToolCall = S["ToolCall"];
export type ToolCallList = S["ToolCallList"];
