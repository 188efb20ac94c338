import { GatewayError } from "../shared/errors.ts";

/**
 * A write to gateway.db that the answer depends on (an Idempotency-Key claimed, a grant stored):
 * when SQLite cannot write (a full disk: SQLITE_FULL; an I/O error) it is 507 insufficient_storage,
 * the registry's answer for new sessions too, and the caller applies nothing. Other errors pass.
 */
export function storedOr507<T>(what: string, write: () => T): T {
	try {
		return write();
	} catch (error) {
		if ((error as { code?: unknown }).code !== "ERR_SQLITE_ERROR") throw error;
		throw new GatewayError(
			507,
			"insufficient_storage",
			`${what}: the gateway cannot write its data directory (${(error as Error).message}); nothing was changed, retry once it has room`,
		);
	}
}
