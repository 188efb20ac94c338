import { useEffect, useState } from "preact/hooks";
import { get, post, seg } from "../api/client.ts";
import type { CreateSession as Body, Info, Models, Session } from "../api/types.ts";
import "../create.css";
import { FolderPicker } from "./folders.tsx";

type Model = Models["models"][number];

/**
 * A new session: name, model (from the models the gateway's pi offers), working folder (its own new
 * folder, or a real one picked, typed or made in the caller's area) and extensions from the
 * gateway's allow-list; then its first prompt, sent once it exists (POST …/prompt: the create
 * operation takes none), so the session opens with its first run going.
 */
export function CreateSession({ sessions, onCreated }: { sessions: Session[]; onCreated: (s: Session) => void }) {
	const [extensions, setExtensions] = useState<string[]>([]);
	const [models, setModels] = useState<Model[]>();
	const [chosen, setChosen] = useState<Set<string>>(new Set());
	const [cwd, setCwd] = useState<string>();
	const [busy, setBusy] = useState(false);
	const [error, setError] = useState<string>();
	useEffect(() => {
		get<Info>("/v1/info")
			.then((info) => setExtensions(info.extensions))
			.catch(() => {});
	}, []);
	// The models a pi child of this gateway offers: asked of one of the caller's live sessions (the
	// API has no list of its own before a session exists).
	const live = sessions.find((s) => s.pid !== null)?.id;
	useEffect(() => {
		if (!live || models) return;
		get<Models>(`/v1/sessions/${seg(live)}/models`)
			.then((m) => setModels(m.models))
			// Kept unknown: the field is free text until a live session answers.
			.catch(() => {});
	}, [live]);
	const submit = async (form: HTMLFormElement) => {
		const data = new FormData(form);
		const text = (name: string) => String(data.get(name) ?? "").trim() || undefined;
		const body: Body = { name: text("name"), cwd };
		const model = text("model");
		if (model) {
			const slash = model.indexOf("/");
			if (slash > 0) {
				body.provider = model.slice(0, slash);
				body.model = model.slice(slash + 1);
			} else body.model = model;
		}
		if (chosen.size > 0) body.extensions = [...chosen];
		const prompt = String(data.get("prompt") ?? "").trim();
		setBusy(true);
		setError(undefined);
		let created: Session | undefined;
		try {
			created = await post<Session>("/v1/sessions", body);
			if (prompt) await post(`/v1/sessions/${seg(created.id)}/prompt`, { message: prompt });
			onCreated(created);
		} catch (e) {
			// Made, but its prompt was refused: open it all the same (the message box is there), saying why.
			if (created) onCreated(created);
			else setError((e as Error).message);
		} finally {
			setBusy(false);
		}
	};
	return (
		<section class="create" aria-labelledby="create-title">
			<h1 id="create-title">New session</h1>
			<form
				class="card form"
				onSubmit={(e) => {
					e.preventDefault();
					void submit(e.currentTarget);
				}}
			>
				<label for="new-name">Name</label>
				<input id="new-name" name="name" maxLength={200} placeholder="e.g. fix the login test" />
				<label for="new-prompt">First prompt</label>
				<textarea
					id="new-prompt"
					name="prompt"
					rows={3}
					placeholder="What should the agent do? (optional: without one, the session waits for your message)"
				/>
				<label for="new-model">Model</label>
				{models && models.length > 0 ? (
					<select id="new-model" name="model">
						<option value="">The gateway's default</option>
						{models.map((m) => (
							<option key={`${m.provider}/${m.id}`} value={`${m.provider}/${m.id}`}>
								{m.name ?? m.id} ({m.provider})
							</option>
						))}
					</select>
				) : (
					<input id="new-model" name="model" placeholder="provider/model, default: the gateway's" />
				)}
				<FolderPicker sessions={sessions} value={cwd} onChange={setCwd} />
				{extensions.length > 0 && (
					<fieldset>
						<legend>Extensions</legend>
						{extensions.map((name) => (
							<label class="check" key={name}>
								<input
									type="checkbox"
									checked={chosen.has(name)}
									onChange={(e) => {
										const next = new Set(chosen);
										if (e.currentTarget.checked) next.add(name);
										else next.delete(name);
										setChosen(next);
									}}
								/>
								{name}
							</label>
						))}
					</fieldset>
				)}
				<div class="row">
					<button type="submit" class="primary" disabled={busy}>
						Create session
					</button>
				</div>
				{error && (
					<p role="alert" class="error">
						{error}
					</p>
				)}
			</form>
		</section>
	);
}
