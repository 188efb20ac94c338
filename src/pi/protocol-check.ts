/**
 * Compile-time checks of the gateway's protocol against pi's own types (no runtime code). A pi
 * upgrade that adds, drops or reshapes a command, a response or a dialog makes `tsc` fail here,
 * with the name of what moved, instead of letting users find out. Each `Expect<…>` below must
 * be `true`; when one is not, read the type it names to see which command or field differs.
 */
import type { RpcCommand, RpcExtensionUIRequest, RpcResponse } from "@earendil-works/pi-coding-agent";
import type { z } from "@hono/zod-openapi";
import type { RpcCommand as LegacyRpcCommand } from "pi-legacy";
import type { legacyMissingCommands } from "./dialect.ts";
import type { CommandType, commandFields, DialogMethod, PiResponse, UiRequest } from "./protocol.ts";

/** Exactly the same type (not merely assignable either way). */
export type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
export type Expect<T extends true> = T;

type PiCommandType = RpcCommand["type"];

/** Every command the gateway validates is one pi knows, and every command pi knows has a schema. */
export type CommandsAreOnlyPis = Expect<Equal<Exclude<CommandType, PiCommandType>, never>>;
export type EveryPiCommandHasASchema = Expect<Equal<Exclude<PiCommandType, CommandType>, never>>;

/** Named keys only: zod types an empty strict object with a `string` index signature. */
type Named<T> = keyof { [P in keyof T as string extends P ? never : P]: T[P] };
type Ours<K extends CommandType> = z.output<(typeof commandFields)[K]>;
type Theirs<K extends CommandType> = Omit<Extract<RpcCommand, { type: K }>, "type" | "id">;
/** Commands whose validated fields are not pi's: other field names, or values pi would not accept. */
export type CommandsWithOtherFields = {
	[K in CommandType]: Equal<Named<Ours<K>>, Named<Theirs<K>>> extends true
		? Ours<K> extends Theirs<K>
			? never
			: K
		: K;
}[CommandType];
export type CommandFieldsArePis = Expect<Equal<CommandsWithOtherFields, never>>;

/** What the gateway reads from a response is a widening of pi's responses, never a guess beyond them. */
export type ResponsesFit = Expect<RpcResponse extends PiResponse ? true : false>;
export type ResponseCommandsArePis = Expect<Equal<Exclude<RpcResponse, { success: false }>["command"], CommandType>>;

/** Dialogs and fire-and-forget UI calls are pi's union, method by method. */
export type UiRequestIsPis = Expect<Equal<UiRequest, RpcExtensionUIRequest>>;
/** pi's UI methods are the gateway's dialogs plus the fire-and-forget calls sessions/ui-state.ts applies. */
export type UiMethodsArePis = Expect<
	Equal<
		RpcExtensionUIRequest["method"],
		DialogMethod | "notify" | "setStatus" | "setWidget" | "setTitle" | "set_editor_text"
	>
>;

/**
 * The legacy pi (0.73, `pi-legacy`) lacks exactly the commands the gateway answers 501 for: a
 * command it gains or loses in a patch release breaks this check, not the compatibility mode.
 */
export type LegacyLacksExactly = Expect<
	Equal<Exclude<PiCommandType, LegacyRpcCommand["type"]>, (typeof legacyMissingCommands)[number]>
>;
export type LegacyHasNoOthers = Expect<Equal<Exclude<LegacyRpcCommand["type"], PiCommandType>, never>>;
