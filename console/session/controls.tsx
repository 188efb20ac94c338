import { useEffect, useState } from "preact/hooks";
import { get, put, seg } from "../api/client.ts";
import type { Models, Session, ThinkingLevels } from "../api/types.ts";

/** The session's model and thinking level, as pi offers them. */
export function Controls({ id, session }: { id: string; session: Session }) {
	const [models, setModels] = useState<Models["models"]>([]);
	const [levels, setLevels] = useState<string[]>([]);
	const [model, setModel] = useState(session.model ? `${session.model.provider}/${session.model.id}` : "");
	const [level, setLevel] = useState(session.thinkingLevel ?? "");
	const [error, setError] = useState<string>();
	useEffect(() => {
		get<Models>(`/v1/sessions/${seg(id)}/models`)
			.then((m) => setModels(m.models))
			.catch(() => {});
		get<ThinkingLevels>(`/v1/sessions/${seg(id)}/thinking-levels`)
			.then((l) => setLevels(l.levels))
			.catch(() => {});
	}, [id]);
	const choose = (value: string) => {
		const chosen = models.find((m) => `${m.provider}/${m.id}` === value);
		if (!chosen) return;
		setModel(value);
		put(`/v1/sessions/${seg(id)}/model`, { provider: chosen.provider, modelId: chosen.id }).catch((e: Error) =>
			setError(e.message),
		);
	};
	const think = (value: string) => {
		setLevel(value);
		put(`/v1/sessions/${seg(id)}/thinking-level`, { level: value }).catch((e: Error) => setError(e.message));
	};
	return (
		<div class="controls">
			<label>
				Model{" "}
				<select value={model} onChange={(e) => choose(e.currentTarget.value)}>
					{!models.some((m) => `${m.provider}/${m.id}` === model) && <option value={model}>{model || "—"}</option>}
					{models.map((m) => (
						<option key={`${m.provider}/${m.id}`} value={`${m.provider}/${m.id}`}>
							{m.name ?? m.id} ({m.provider})
						</option>
					))}
				</select>
			</label>
			<label>
				Thinking{" "}
				<select value={level} onChange={(e) => think(e.currentTarget.value)}>
					{!levels.includes(level) && <option value={level}>{level || "—"}</option>}
					{levels.map((l) => (
						<option key={l} value={l}>
							{l}
						</option>
					))}
				</select>
			</label>
			{error && <p class="error">{error}</p>}
		</div>
	);
}
