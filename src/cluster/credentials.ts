import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Config } from "../config/config.ts";

/**
 * Where a cluster node's two secrets come from, and what they are never allowed to be: on a
 * command line (every process of the host reads /proc/<pid>/cmdline) or, for the cluster secret,
 * in the database (whoever reads it could then sign tickets and forwarded requests).
 */

/** Said on stderr and in the log when --database-url on argv carries a password. */
export const databaseUrlOnArgv =
	"--database-url on the command line carries its password, and every local process can read it (/proc/<pid>/cmdline), pi's tools included; use PI_GATEWAY_DATABASE_URL or --database-url-file";

/** Fewer characters than this guess too easily (`openssl rand -base64 32` gives 44). */
const minSecretLength = 32;

function readSecret(path: string, what: string): string {
	let text: string;
	try {
		text = readFileSync(path, "utf8");
	} catch (error) {
		throw new Error(`Cannot read the ${what} file ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`);
	}
	return text.trim();
}

/** Whether a postgres:// URL names a password (in the URL; a password in PGPASSWORD or ~/.pgpass is not on argv). */
export function hasPassword(url: string): boolean {
	try {
		return new URL(url).password !== "";
	} catch {
		return false;
	}
}

/** Settles config.databaseUrl: the value given (PI_GATEWAY_DATABASE_URL or --database-url), else --database-url-file. */
export function resolveDatabaseUrl(config: Config): void {
	if (!config.databaseUrlFile) return;
	if (config.databaseUrl)
		throw new Error("Give the database URL one way: --database-url/PI_GATEWAY_DATABASE_URL or --database-url-file");
	const url = readSecret(config.databaseUrlFile, "database URL");
	if (!/^postgres(ql)?:\/\//.test(url))
		throw new Error(`--database-url-file: ${config.databaseUrlFile} does not hold a postgres:// or postgresql:// URL`);
	config.databaseUrl = url;
}

/**
 * The cluster's shared secret, from PI_GATEWAY_CLUSTER_SECRET or --cluster-secret-file: required in
 * cluster mode, the same on every node, and never written to the database. (No flag of its own: a
 * secret on argv would be everyone's.)
 */
export function resolveClusterSecret(config: Config): string {
	if (config.clusterSecret && config.clusterSecretFile)
		throw new Error("Give the cluster secret one way: PI_GATEWAY_CLUSTER_SECRET or --cluster-secret-file");
	const secret = config.clusterSecretFile
		? readSecret(config.clusterSecretFile, "cluster secret")
		: (config.clusterSecret ?? "");
	if (secret.length === 0)
		throw new Error(
			"Cluster mode (--database-url) needs the cluster's shared secret, the same on every node: PI_GATEWAY_CLUSTER_SECRET or --cluster-secret-file (e.g. openssl rand -base64 32)",
		);
	if (secret.length < minSecretLength)
		throw new Error(`The cluster secret must be at least ${minSecretLength} characters long`);
	return secret;
}

/** One key per use, so a MAC made for one purpose never checks out for another. */
export function clusterKeys(secret: string): { tickets: Buffer; forward: Buffer } {
	const derive = (purpose: string) => createHmac("sha256", secret).update(`pi-gateway ${purpose}`).digest();
	return { tickets: derive("stream tickets"), forward: derive("forwarded requests") };
}
