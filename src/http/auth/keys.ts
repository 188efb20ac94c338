import { createHash, randomBytes } from "node:crypto";
import {
	chownSync,
	existsSync,
	readFileSync,
	renameSync,
	statSync,
	unwatchFile,
	watchFile,
	writeFileSync,
} from "node:fs";
import { dirname } from "node:path";
import type { Logger } from "pino";
import { z } from "zod";
import { ProviderKeys } from "../../config/own-keys.ts";
import { PrincipalName } from "../../sessions/registry/index.ts";
import { jwtPrefix } from "./jwt-names.ts";
import { type Principal, Scope } from "./principals.ts";

/**
 * One API key as the keys file keeps it: never the secret, only its SHA-256 (a key is 32 random
 * bytes, so a plain hash is enough: there is nothing to brute-force, unlike a password).
 */
export const KeyRecord = z.object({
	id: z.string().min(1),
	hash: z.string().regex(/^sha256:[0-9a-f]{64}$/),
	// `admin` is the token's principal; a key gets admin rights through its scopes, not its name.
	// `jwt:…` names an identity provider's subject: a key named so would be that user.
	principal: PrincipalName.refine(
		(name) => name !== "admin",
		"`admin` is the token's principal; name the key's owner",
	).refine((name) => !name.startsWith(jwtPrefix), "`jwt:` names identity provider subjects; name the key otherwise"),
	scopes: z.array(Scope).min(1),
	expiresAt: z.iso.datetime({ offset: true }).optional(),
	createdAt: z.iso.datetime({ offset: true }).optional(),
});
export type KeyRecord = z.infer<typeof KeyRecord>;
/**
 * `providerKeys`: principals' own provider keys, by where each is (`env:NAME`, `file:/path`), never
 * the key itself (config/own-keys.ts). A bad entry makes the whole file invalid.
 */
export const KeysFile = z.object({ keys: z.array(KeyRecord), providerKeys: ProviderKeys.optional() });
type KeysFileData = z.infer<typeof KeysFile>;

export const hashKey = (secret: string) => `sha256:${createHash("sha256").update(secret).digest("hex")}`;

export function readKeysFile(path: string): KeyRecord[] {
	return readWholeKeysFile(path).keys;
}

/** The keys file with its principals' own provider keys. */
export function readWholeKeysFile(path: string): KeysFileData {
	if (!existsSync(path)) return { keys: [] };
	const text = readFileSync(path, "utf8");
	try {
		return KeysFile.parse(JSON.parse(text));
	} catch (error) {
		const reason = error instanceof z.ZodError ? z.prettifyError(error) : (error as Error).message;
		throw new Error(`The keys file ${path} is invalid: ${reason}`);
	}
}

/**
 * Appends a new key to the keys file (created, mode 0600, when missing) and returns its secret,
 * which exists nowhere else: the file keeps only the hash. Written to a temporary file and
 * renamed, so a gateway reloading the file never reads half of it.
 */
export function createKey(
	path: string,
	principal: string,
	keyScopes: Scope[],
	expiresAt?: Date,
): { secret: string; record: KeyRecord } {
	const file = readWholeKeysFile(path);
	const id = `key_${randomBytes(6).toString("hex")}`;
	const secret = `pgk_${randomBytes(32).toString("base64url")}`;
	const record = KeyRecord.parse({
		id,
		hash: hashKey(secret),
		principal,
		scopes: keyScopes,
		...(expiresAt ? { expiresAt: expiresAt.toISOString() } : {}),
		createdAt: new Date().toISOString(),
	});
	writeKeysFile(path, { ...file, keys: [...file.keys, record] });
	return { secret, record };
}

/**
 * Written to a temporary file and renamed, so a gateway reloading the file never reads half of it.
 * Run as root (`sudo pi-gateway keys create --data-dir /var/lib/pi-gateway`), the file keeps the
 * owner of the file it replaces, else of its folder: a 0600 file of root's is one the gateway's own
 * user (systemd's DynamicUser) cannot read, and every key in it would be a 401.
 */
function writeKeysFile(path: string, file: KeysFileData): void {
	const temporary = `${path}.${process.pid}.tmp`;
	writeFileSync(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
	if (process.getuid?.() === 0) {
		const owner = statSync(path, { throwIfNoEntry: false }) ?? statSync(dirname(path));
		if (owner.uid !== 0) chownSync(temporary, owner.uid, owner.gid);
	}
	renameSync(temporary, path);
}

/**
 * Removes the key with this id, or every key of the principal with this name, and returns what
 * it removed (nothing: the file is left as it was). A running gateway sees the change within its
 * poll interval (KeyStore.watch), so the secret stops working without a restart.
 */
export function revokeKeys(path: string, name: string): KeyRecord[] {
	const file = readWholeKeysFile(path);
	const gone = file.keys.filter((key) => key.id === name || key.principal === name);
	if (gone.length > 0) writeKeysFile(path, { ...file, keys: file.keys.filter((key) => !gone.includes(key)) });
	return gone;
}

/**
 * Sets (or, with `source` undefined, removes) `principal`'s own key for `provider`: where it is,
 * `env:NAME` or `file:/path`. The secret is never written here. A running gateway uses it from the
 * principal's next session start (a live session keeps the keys it started with).
 */
export function setProviderKey(path: string, principal: string, provider: string, source?: string): void {
	const file = readWholeKeysFile(path);
	const all = new Map(Object.entries(file.providerKeys ?? {}));
	const own = new Map(Object.entries(all.get(principal) ?? {}));
	if (source === undefined) own.delete(provider);
	else own.set(provider, source);
	if (own.size > 0) all.set(principal, Object.fromEntries(own));
	else all.delete(principal);
	const providerKeys = ProviderKeys.parse(Object.fromEntries(all));
	writeKeysFile(path, { ...file, providerKeys });
}

/**
 * The keys of `--keys-file`, looked up by hash. Reloaded when the file changes (polled, so an
 * editor's rename-over-the-file is seen too) or on SIGHUP (main.ts); a file that became invalid
 * keeps the keys loaded before and says why in the log.
 */
export class KeyStore {
	#byHash = new Map<string, KeyRecord>();
	readonly #path: string;
	readonly #logger: Logger;
	#watching = false;
	readonly #reloaded = new Set<() => void>();
	/** The file as last read (inode, size, mtime): a key presented after a change reads it again first. */
	#version = "";

	constructor(path: string, logger: Logger) {
		this.#path = path;
		this.#logger = logger;
		this.#load(); // at start a bad file is an error, not a warning
	}

	get size(): number {
		return this.#byHash.size;
	}

	#load(): void {
		const version = this.#stat();
		this.#byHash = new Map(readKeysFile(this.#path).map((key) => [key.hash, key]));
		this.#version = version;
	}

	#stat(): string {
		const stat = statSync(this.#path, { throwIfNoEntry: false });
		return stat ? `${stat.ino}:${stat.size}:${stat.mtimeMs}` : "none";
	}

	reload(): void {
		try {
			this.#load();
			this.#logger.info({ keysFile: this.#path, keys: this.#byHash.size }, "keys file reloaded");
		} catch (error) {
			// Not read again until it changes: a broken file is said once, not on every request.
			this.#version = this.#stat();
			this.#logger.error({ err: error, keysFile: this.#path }, "keys file not reloaded; the keys loaded before stay");
			return;
		}
		for (const listener of this.#reloaded) listener();
	}

	/** Calls `listener` after each reload that read the file (a key may be gone: its streams end). */
	onReload(listener: () => void): () => void {
		this.#reloaded.add(listener);
		return () => this.#reloaded.delete(listener);
	}

	/** Whether `name` still has a key that has not expired (a stream ticket it was issued lives on it). */
	hasPrincipal(name: string, now = Date.now()): boolean {
		for (const key of this.#byHash.values())
			if (key.principal === name && !(key.expiresAt && Date.parse(key.expiresAt) <= now)) return true;
		return false;
	}

	/** Each principal with a key that has not expired, and the scopes of its keys together. */
	principals(now = Date.now()): Map<string, Set<string>> {
		const principals = new Map<string, Set<string>>();
		for (const key of this.#byHash.values()) {
			if (key.expiresAt && Date.parse(key.expiresAt) <= now) continue;
			const scopes = principals.get(key.principal) ?? new Set<string>();
			for (const scope of key.scopes) scopes.add(scope);
			principals.set(key.principal, scopes);
		}
		return principals;
	}

	watch(intervalMs = 500): void {
		if (this.#watching) return;
		this.#watching = true;
		watchFile(this.#path, { interval: intervalMs, persistent: false }, () => this.reload());
	}

	close(): void {
		if (this.#watching) unwatchFile(this.#path);
		this.#watching = false;
	}

	/**
	 * The principal of a presented secret, if it names a key that has not expired. Its `current`
	 * looks the key up again (by hash: the secret is not kept), for streams that outlive the request.
	 */
	principal(secret: string, now = Date.now()): Principal | undefined {
		// One stat per key lookup: `keys create` works on the next request and `keys revoke` ends the
		// key on it, not at the next poll (the poll is for streams, which no request re-checks).
		if (this.#stat() !== this.#version) this.reload();
		return this.#byKeyHash(hashKey(secret), now);
	}

	#byKeyHash(hash: string, now = Date.now()): Principal | undefined {
		const key = this.#byHash.get(hash);
		if (!key || (key.expiresAt && Date.parse(key.expiresAt) <= now)) return undefined;
		return { name: key.principal, scopes: new Set(key.scopes), current: () => this.#byKeyHash(hash) };
	}
}
