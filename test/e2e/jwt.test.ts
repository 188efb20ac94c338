import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../src/http/auth/keys.ts";
import { noPool, startTestGateway, type TestGateway } from "../helpers/gateway.ts";

// JWTs from an identity provider, checked against its JWKS served here on 127.0.0.1:0: the
// principal and scopes come from the token's claims; a rotated key is fetched; expired tokens,
// other audiences and other issuers are 401. A token's principal is `jwt:<sub>`: never an API
// key's principal of the same name.
type Key = { kid: string; privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"]; jwk: JWK };
async function newKey(kid: string): Promise<Key> {
	const { privateKey, publicKey } = await generateKeyPair("ES256");
	return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } };
}

let served: Key[] = [];
let fetches = 0;
let jwks: Server;
let gw: TestGateway;
let dir: string;
let danaKey: string;
const issuer = "https://idp.example.test";
const audience = "pi-gateway";

beforeAll(async () => {
	served = [await newKey("k1")];
	jwks = createServer((_req, res) => {
		fetches++;
		res.writeHead(200, { "content-type": "application/json" });
		res.end(JSON.stringify({ keys: served.map((k) => k.jwk) }));
	});
	await new Promise<void>((r) => jwks.listen(0, "127.0.0.1", r));
	dir = mkdtempSync(join(tmpdir(), "pi-gateway-jwt-"));
	const keysFile = join(dir, "keys.json");
	danaKey = createKey(keysFile, "dana", ["sessions:read", "sessions:write"]).secret;
	gw = await startTestGateway({
		...noPool,
		keysFile,
		jwtJwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
		jwtIssuer: issuer,
		jwtAudience: audience,
		jwtJwksCooldownMs: 0,
	});
});
afterAll(async () => {
	await gw?.stop();
	await new Promise((r) => jwks.close(r));
	rmSync(dir, { recursive: true, force: true });
});

function token(
	key: Key,
	claims: Record<string, unknown>,
	options: { exp?: string | number | null; aud?: string; iss?: string } = {},
) {
	const jwt = new SignJWT(claims)
		.setProtectedHeader({ alg: "ES256", kid: key.kid })
		.setIssuer(options.iss ?? issuer)
		.setAudience(options.aud ?? audience)
		.setIssuedAt();
	// null: a token that never expires (no `exp` at all).
	if (options.exp !== null) jwt.setExpirationTime(options.exp ?? "5m");
	return jwt.sign(key.privateKey);
}
const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });
const k1 = () => served.find((k) => k.kid === "k1") as Key;

describe("JWT principals", () => {
	it("a valid token is its `sub` with its `scope`s: it creates a session that is its own", async () => {
		const dana = await token(k1(), { sub: "dana", scope: "sessions:read sessions:write" });
		const created = await gw.api("/v1/sessions", { method: "POST", headers: bearer(dana), json: {} });
		expect(created.status).toBe(201);
		const other = await token(k1(), { sub: "erik", scope: ["sessions:read"] });
		expect((await gw.api(`/v1/sessions/${created.body.id}`, { headers: bearer(other) })).status).toBe(404);
		expect((await gw.api(`/v1/sessions/${created.body.id}`, { headers: bearer(dana) })).status).toBe(200);
		// Scopes are the token's: erik may read, not write.
		expect((await gw.api("/v1/sessions", { method: "POST", headers: bearer(other), json: {} })).status).toBe(403);
	});

	it("expired tokens, other audiences and other issuers are 401", async () => {
		const claims = { sub: "dana", scope: "sessions:read" };
		const expired = await token(k1(), claims, { exp: Math.floor(Date.now() / 1000) - 60 });
		const elsewhere = await token(k1(), claims, { aud: "another-service" });
		const forged = await token(k1(), claims, { iss: "https://evil.example.test" });
		const unsigned = await token(await newKey("k1"), claims); // the same kid, another key
		const endless = await token(k1(), claims, { exp: null }); // issue 20: was accepted
		for (const jwt of [expired, elsewhere, forged, unsigned, endless]) {
			const res = await gw.api("/v1/sessions", { headers: bearer(jwt) });
			expect(res.status).toBe(401);
			expect(res.body.code).toBe("unauthorized");
		}
		expect((await gw.api("/v1/sessions", { headers: bearer(await token(k1(), claims)) })).status).toBe(200);
	});

	it("a rotated key is fetched from the JWKS when a token names it", async () => {
		const before = fetches;
		const k2 = await newKey("k2");
		const early = await token(k2, { sub: "dana", scope: "sessions:read" });
		expect((await gw.api("/v1/sessions", { headers: bearer(early) })).status).toBe(401); // not published yet
		served = [...served, k2];
		expect((await gw.api("/v1/sessions", { headers: bearer(early) })).status).toBe(200);
		expect(fetches).toBeGreaterThan(before);
	});

	it("a token's principal is jwt:<sub>: a `sub` equal to an API key's principal is not that principal", async () => {
		const key = { authorization: `Bearer ${danaKey}` };
		const keys = await gw.api("/v1/sessions", { method: "POST", headers: key, json: {} });
		expect(keys.status).toBe(201);
		const impostor = await token(k1(), { sub: "dana", scope: "sessions:read sessions:write" });
		// The key's session is not the token's, and the token's is not the key's.
		expect((await gw.api(`/v1/sessions/${keys.body.id}`, { headers: bearer(impostor) })).status).toBe(404);
		const own = await gw.api("/v1/sessions", { method: "POST", headers: bearer(impostor), json: {} });
		expect((await gw.api(`/v1/sessions/${own.body.id}/access`, { headers: bearer(impostor) })).body.owner).toBe(
			"jwt:dana",
		);
		expect((await gw.api(`/v1/sessions/${own.body.id}`, { headers: key })).status).toBe(404);
	});

	it("an identity provider's subject (auth0|123) works and can be named in a grant", async () => {
		const owner = await token(k1(), { sub: "auth0|123", scope: "sessions:read sessions:write" });
		const reader = await token(k1(), { sub: "google-oauth2|456", scope: "sessions:read" });
		const created = await gw.api("/v1/sessions", { method: "POST", headers: bearer(owner), json: {} });
		expect(created.status).toBe(201);
		const id = created.body.id as string;
		expect((await gw.api(`/v1/sessions/${id}`, { headers: bearer(reader) })).status).toBe(404);
		const shared = await gw.api(`/v1/sessions/${id}/access`, {
			method: "PUT",
			headers: bearer(owner),
			json: { grants: [{ principal: "jwt:google-oauth2|456", can: ["read"] }] },
		});
		expect(shared.status).toBe(200);
		expect(shared.body).toMatchObject({ owner: "jwt:auth0|123", grants: [{ principal: "jwt:google-oauth2|456" }] });
		expect((await gw.api(`/v1/sessions/${id}`, { headers: bearer(reader) })).status).toBe(200);
	});
});
