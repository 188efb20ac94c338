import { createRemoteJWKSet, errors, type JWTPayload, jwtVerify } from "jose";
import type { Config } from "../../config/config.ts";
import { jwtPrincipalName } from "./jwt-names.ts";
import { type Principal, Scope } from "./principals.ts";

const jwtShape = /^[\w-]+\.[\w-]+\.[\w-]+$/;

/**
 * Principals from an identity provider's JWTs (jose): the signature is checked against the
 * provider's JWKS (fetched, cached, and fetched again when a token names a key it does not know:
 * key rotation), and `iss`, `aud`, `exp` (required) and `nbf` are checked. The principal is
 * `jwt:` and one claim (`sub` by default), the scopes another (`scope`: a space-separated string,
 * or an array).
 */
export class JwtVerifier {
	readonly #jwks: ReturnType<typeof createRemoteJWKSet>;
	readonly #config: Config;

	constructor(config: Config) {
		if (!config.jwtJwksUrl) throw new Error("JwtVerifier without --jwt-jwks-url");
		this.#config = config;
		this.#jwks = createRemoteJWKSet(new URL(config.jwtJwksUrl), {
			cooldownDuration: config.jwtJwksCooldownMs,
			timeoutDuration: 5000,
		});
	}

	static looksLikeJwt(credential: string): boolean {
		return jwtShape.test(credential);
	}

	/** The token's principal, or undefined when it is not valid here (any reason: the 401 is the same). */
	async principal(token: string): Promise<Principal | undefined> {
		let payload: JWTPayload;
		try {
			({ payload } = await jwtVerify(token, this.#jwks, {
				issuer: this.#config.jwtIssuer,
				audience: this.#config.jwtAudience,
				// jose checks `exp` only when present: a token without one would never expire.
				requiredClaims: ["exp"],
				clockTolerance: 5,
			}));
		} catch (error) {
			if (error instanceof errors.JOSEError) return undefined;
			throw error;
		}
		const name = jwtPrincipalName(payload[this.#config.jwtPrincipalClaim]);
		if (name === undefined) return undefined;
		const claim = payload[this.#config.jwtScopesClaim];
		const listed = typeof claim === "string" ? claim.split(" ") : Array.isArray(claim) ? claim : [];
		const scopes = listed.flatMap((s) => {
			const parsed = Scope.safeParse(s);
			return parsed.success ? [parsed.data] : [];
		});
		return { name, scopes: new Set(scopes) };
	}
}
