/**
 * Compile-time checks of the HTTP schemas that describe pi's answers against pi's own types (no
 * runtime code; src/pi/protocol-check.ts does the commands and dialogs). A pi upgrade that renames
 * or adds a get_state field or a disposition breaks `tsc` here, so the spec never lies quietly.
 */
import type { RpcCommand, RpcResponse, RpcSessionState } from "@earendil-works/pi-coding-agent";
import type { z } from "@hono/zod-openapi";
import type { Equal, Expect } from "../../../pi/protocol-check.ts";
import type { Disposition, PiState } from "../../transport/schemas.ts";
import type { commandSpecs } from "./commands.table.ts";

/** Named keys only (a loose object's output also has a `string` index signature). */
type Named<T> = keyof { [P in keyof T as string extends P ? never : P]: T[P] };

/** GET …/state documents exactly the fields pi's get_state returns, no more, no fewer. */
export type StateFieldsArePis = Expect<Equal<Named<z.output<typeof PiState>>, keyof RpcSessionState>>;
/** Which of them pi may leave out. */
type Optional<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T];
export type StateOptionalsArePis = Expect<
	Equal<Optional<Pick<z.output<typeof PiState>, keyof RpcSessionState>>, Optional<RpcSessionState>>
>;

/** A prompt's disposition is one of pi's. */
type PromptData = Extract<RpcResponse, { command: "prompt"; success: true }>["data"];
export type DispositionsArePis = Expect<Equal<z.output<typeof Disposition>["disposition"], PromptData["disposition"]>>;

/**
 * Every command in the operations table is pi's, and every pi command has an operation there or is
 * one of the run commands (runs.routes.ts: prompt, steer, follow_up).
 */
type TableTypes = (typeof commandSpecs)[number]["type"];
export type TableCommandsArePis = Expect<Equal<Exclude<TableTypes, RpcCommand["type"]>, never>>;
export type EveryPiCommandHasAnOperation = Expect<
	Equal<Exclude<RpcCommand["type"], TableTypes | "prompt" | "steer" | "follow_up">, never>
>;
