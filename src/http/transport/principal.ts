import { z } from "zod";

/** What a credential may do. `admin` holds every other scope too (all sessions, metrics, webhooks). */
export const Scope = z.enum(["sessions:read", "sessions:write", "approvals:read", "approvals:answer", "admin"]);
export type Scope = z.infer<typeof Scope>;
export const scopes = Scope.options;

/** Who is calling: a name (the audit and `resolvedBy` use it) and what it may do. */
export interface Principal {
	name: string;
	scopes: ReadonlySet<Scope>;
	/** --no-auth: nobody is authenticated, so a body's `by` still names who answers. */
	anonymous?: true;
	/**
	 * The credential's principal as of now, undefined once it was revoked (an API key removed from
	 * the keys file): an open stream asks again when keys or shares change (open-streams.ts).
	 * Absent: the credential cannot be revoked while the gateway runs (the token).
	 */
	current?: () => Principal | undefined;
}
