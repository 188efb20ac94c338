import type { Scope, Whoami } from "../api/types.ts";

/** Whether the signed-in credential holds a scope (`admin` holds them all). */
export const can = (me: Whoami | undefined, scope: Scope) =>
	me !== undefined && (me.scopes.includes("admin") || me.scopes.includes(scope));
