import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { startTestGateway, type TestGateway, type TestGatewayOptions } from "./gateway.ts";
import { startTestPostgres } from "./postgres.ts";

/**
 * The layouts the standing security batteries (sandbox-escape, trust-boundary, workspace-refusals)
 * run in, README's first:
 * - `default`: `npm start` as README gives it: no --workspace-root, no --default-cwd (the root is
 *   <data-dir>/workspaces, a session without cwd works in a folder of its own), keys added.
 * - `shared-root`: --workspace-root set to a folder, hence --default-cwd root.
 * - `cluster`: the default layout with the registry in PostgreSQL (embedded), the database URL and
 *   the cluster secret in files (docs/cluster.md's --database-url-file, --cluster-secret-file).
 * A workspace root that contains the data dir does not start at all: expectRefusedLayout.
 */
export type BatteryLayout = "default" | "shared-root" | "cluster";
export const batteryLayouts: BatteryLayout[] = ["default", "shared-root", "cluster"];

export interface LayoutGateway extends TestGateway {
	layout: BatteryLayout;
	/** The layout's own secrets an agent must never read, by name (cluster: the database password, the cluster secret). */
	layoutSecrets: Record<string, string>;
	/** The files that hold them (an attacker is told every path). */
	layoutSecretFiles: string[];
}

/** A test gateway in `layout`; its stop() also stops what the layout started (cluster: PostgreSQL). */
export async function startInLayout(layout: BatteryLayout, options: TestGatewayOptions = {}): Promise<LayoutGateway> {
	if (layout !== "cluster") {
		const gw = await startTestGateway({ ...options, layout });
		return { ...gw, layout, layoutSecrets: {}, layoutSecretFiles: [] };
	}
	const server = await startTestPostgres();
	// Not under /tmp, which the sandbox hides whole: where an operator keeps them (/etc, /run/secrets).
	const secrets = mkdtempSync("/var/tmp/pi-gateway-layout-secrets-");
	try {
		const databaseUrl = await server.freshDatabase();
		const clusterSecret = `layout-cluster-secret-${"c4".repeat(16)}`;
		const databaseUrlFile = join(secrets, "database-url");
		const clusterSecretFile = join(secrets, "cluster-secret");
		writeFileSync(databaseUrlFile, `${databaseUrl}\n`, { mode: 0o600 });
		writeFileSync(clusterSecretFile, `${clusterSecret}\n`, { mode: 0o600 });
		const gw = await startTestGateway({ ...options, layout: "default", databaseUrlFile, clusterSecretFile });
		return {
			...gw,
			layout,
			layoutSecrets: { "database password": new URL(databaseUrl).password, "cluster secret": clusterSecret },
			layoutSecretFiles: [databaseUrlFile, clusterSecretFile],
			async stop() {
				try {
					await gw.stop();
				} finally {
					await server.stop();
					rmSync(secrets, { recursive: true, force: true });
				}
			},
		};
	} catch (error) {
		await server.stop();
		rmSync(secrets, { recursive: true, force: true });
		throw error;
	}
}

/**
 * The layout no battery can run in: a --workspace-root that contains the data dir (every session
 * could read gateway.db, the token and the conversations). The gateway must refuse to start, and
 * say which flag to change.
 */
export async function expectRefusedLayout(options: TestGatewayOptions = {}): Promise<void> {
	const home = mkdtempSync(join(tmpdir(), "pi-gateway-layout-home-"));
	try {
		mkdirSync(join(home, ".pi-gateway"));
		await expect(
			startTestGateway({ ...options, workspaceRoot: home, dataDir: join(home, ".pi-gateway") }),
		).rejects.toThrow(/contains the data dir .*--data-dir/);
	} finally {
		rmSync(home, { recursive: true, force: true });
	}
}
