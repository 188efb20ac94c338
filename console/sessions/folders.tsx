import { useEffect, useState } from "preact/hooks";
import { call, get, seg } from "../api/client.ts";
import type { Session, WorkspaceListing } from "../api/types.ts";

/**
 * Where a new session works. A `cwd` is relative to the caller's area of the workspace root; the API
 * lists and writes folders only through a session (…/files), so the area is read off the caller's
 * own sessions (one made with a folder of its own works in `<area>/<its id>`), and a folder is
 * browsed, and made, through a session that works in it. Only real folders are offered: a session's
 * own folder (`<area>/ses_…`) is that session's, never a place to start another one, so it is
 * neither a place to look in nor listed, and no session id is shown. Made means: an empty `.keep`
 * file written into it (PUT …/files/content creates the folders on its path), never replacing a file.
 */
interface Root {
	/** The folder, relative to the area ("" is the area itself). */
	rel: string;
	sessionId: string;
	label: string;
}

const dirname = (p: string) => p.slice(0, Math.max(0, p.lastIndexOf("/")));
const join = (a: string, b: string) => [a, b].filter(Boolean).join("/");
/** A session's own folder's name, as the gateway makes it (`ses_` and the id's base64url). */
export const sessionFolder = (name: string) => /^ses_[\w-]+$/.test(name);

/** The caller's area and the real folders (not sessions' own) its sessions work in, as relative paths. */
export function areaRoots(sessions: readonly Session[]): { area?: string; roots: Root[] } {
	const votes = new Map<string, number>();
	for (const s of sessions)
		if (s.cwd.endsWith(`/${s.id}`)) votes.set(dirname(s.cwd), (votes.get(dirname(s.cwd)) ?? 0) + 1);
	const area = [...votes].sort((a, b) => b[1] - a[1])[0]?.[0];
	if (area === undefined) return { roots: [] };
	const roots = new Map<string, Root>();
	for (const s of sessions) {
		if (s.cwd !== area && !s.cwd.startsWith(`${area}/`)) continue;
		const rel = s.cwd.slice(area.length + 1);
		if (rel.split("/").some(sessionFolder)) continue;
		if (!roots.has(rel)) roots.set(rel, { rel, sessionId: s.id, label: rel || "my area" });
	}
	return { area, roots: [...roots.values()].sort((a, b) => a.rel.localeCompare(b.rel)) };
}

const validName = (name: string) => /^[^/\\\0]{1,255}$/.test(name) && name !== "." && name !== "..";

export function FolderPicker(props: { sessions: Session[]; value?: string; onChange: (cwd?: string) => void }) {
	const [mode, setMode] = useState<"own" | "pick">("own");
	const { roots } = areaRoots(props.sessions);
	return (
		<fieldset class="folder-picker">
			<legend>Working folder</legend>
			<label class="check">
				<input
					type="radio"
					name="folder-mode"
					checked={mode === "own"}
					onChange={() => {
						setMode("own");
						props.onChange(undefined);
					}}
				/>
				A new, empty folder of its own
			</label>
			<label class="check">
				<input type="radio" name="folder-mode" checked={mode === "pick"} onChange={() => setMode("pick")} />A folder in
				my area
			</label>
			{mode === "pick" && (
				<>
					{roots.length === 0 ? (
						<p class="muted picker">
							None of your sessions works in a folder of your area yet (only in folders of their own), so there is none
							to browse: type one that exists, relative to your area.
						</p>
					) : (
						<Browser roots={roots} value={props.value} onChange={props.onChange} />
					)}
					<label for="new-cwd">Folder, relative to my area</label>
					<input
						id="new-cwd"
						value={props.value ?? ""}
						placeholder="e.g. projects/web"
						onInput={(e) => props.onChange(e.currentTarget.value.trim() || undefined)}
					/>
				</>
			)}
		</fieldset>
	);
}

function Browser({ roots, value, onChange }: { roots: Root[]; value?: string; onChange: (cwd?: string) => void }) {
	const [rootAt, setRootAt] = useState(0);
	const [sub, setSub] = useState("");
	const [dirs, setDirs] = useState<string[]>();
	const [name, setName] = useState("");
	const [error, setError] = useState<string>();
	const [epoch, setEpoch] = useState(0);
	const root = roots[Math.min(rootAt, roots.length - 1)] as Root;
	const here = join(root.rel, sub);
	useEffect(() => {
		setDirs(undefined);
		setError(undefined);
		get<WorkspaceListing>(`/v1/sessions/${seg(root.sessionId)}/files?path=${seg(sub)}`)
			// Sessions' own folders (in the area itself) are theirs: not listed.
			.then((l) => setDirs(l.entries.filter((e) => e.type === "dir" && !sessionFolder(e.name)).map((e) => e.name)))
			.catch((e: Error) => setError(e.message));
	}, [root.sessionId, sub, epoch]);
	const create = async () => {
		const folder = name.trim();
		if (!validName(folder)) return setError("A folder name: no slashes, not . or ..");
		try {
			await call(
				"PUT",
				`/v1/sessions/${seg(root.sessionId)}/files/content?path=${seg(join(join(sub, folder), ".keep"))}`,
				{
					raw: "",
					headers: { "If-None-Match": "*", "Content-Type": "application/octet-stream" },
				},
			);
			setName("");
			setSub(join(sub, folder));
			onChange(join(here, folder));
			setEpoch((n) => n + 1);
		} catch (e) {
			setError((e as Error).message);
		}
	};
	return (
		<div class="picker">
			<label for="folder-root">Look in</label>
			<select
				id="folder-root"
				value={String(rootAt)}
				onChange={(e) => {
					setRootAt(Number(e.currentTarget.value));
					setSub("");
				}}
			>
				{roots.map((r, i) => (
					<option key={r.rel} value={String(i)}>
						{r.label}
					</option>
				))}
			</select>
			<p class="meta">
				In <code>{here || "my area"}</code>
			</p>
			<ul class="plain folders" aria-label="Folders">
				{sub && (
					<li>
						<button type="button" class="link" onClick={() => setSub(dirname(sub))}>
							.. (up)
						</button>
					</li>
				)}
				{dirs?.map((d) => (
					<li key={d}>
						<button type="button" class="link" onClick={() => setSub(join(sub, d))}>
							{d}/
						</button>
					</li>
				))}
				{dirs?.length === 0 && <li class="muted">No folders here.</li>}
			</ul>
			<div class="row">
				<button type="button" onClick={() => onChange(here || undefined)} aria-pressed={value === here}>
					Use this folder
				</button>
				<span class="muted">
					Chosen: <code>{value ?? "none yet"}</code>
				</span>
			</div>
			<div class="row">
				<label for="folder-new" class="sr">
					New folder name
				</label>
				<input
					id="folder-new"
					placeholder="new folder name"
					value={name}
					onInput={(e) => setName(e.currentTarget.value)}
				/>
				<button type="button" onClick={create}>
					Create folder
				</button>
			</div>
			{error && (
				<p role="alert" class="error">
					{error}
				</p>
			)}
		</div>
	);
}
