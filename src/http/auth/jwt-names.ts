/**
 * An identity provider's subjects live in a namespace of their own: the principal of a JWT is
 * `jwt:<sub>`, so a `sub` equal to an API key's principal name (or `admin`) is never that
 * principal, and keys may not be named `jwt:…` (keys.ts). Grants name them the same way
 * (`jwt:auth0|123`). The prefix plus the subject fits the 128 characters of a principal's name.
 */
export const jwtPrefix = "jwt:";

const subject = /^[\w.@:|-]{1,124}$/;

/** The principal name of a token's subject claim, or undefined when the claim cannot be one. */
export function jwtPrincipalName(claim: unknown): string | undefined {
	if (typeof claim !== "string" || !subject.test(claim)) return undefined;
	return `${jwtPrefix}${claim}`;
}
