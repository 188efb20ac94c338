import { useMemo } from "preact/hooks";
import { Code, languageOf } from "./highlight.tsx";
import { parseUnified } from "./unified.ts";

/** Past this many lines a file is shown without colours (each line is highlighted on its own). */
const colourLines = 5000;

/**
 * A file of the Files view as code: numbered lines (the numbers are not selected with the text),
 * syntax colours by its extension, and the lines the session added or changed marked (from its
 * diff since the session started, when it has one). Loaded with the review's chunk.
 */
export function CodeFile({ path, text, diff }: { path: string; text: string; diff?: string | null }) {
	const lines = useMemo(() => {
		const split = text.split("\n");
		if (text.endsWith("\n")) split.pop();
		return split;
	}, [text]);
	const added = useMemo(() => {
		const set = new Set<number>();
		if (diff) for (const l of parseUnified(diff).lines) if (l.kind === "add" && l.new !== undefined) set.add(l.new);
		return set;
	}, [diff]);
	const language = lines.length <= colourLines ? languageOf(path) : undefined;
	return (
		<div class="diff-scroll">
			<table class="diff code-file" aria-label={`Contents of ${path}`}>
				<colgroup>
					<col class="ln-col" />
					<col />
				</colgroup>
				<thead class="sr">
					<tr>
						<th scope="col">Line</th>
						<th scope="col">Code</th>
					</tr>
				</thead>
				<tbody>
					{lines.map((line, i) => (
						<tr key={i} class={added.has(i + 1) ? "add" : undefined}>
							<td class="ln">{i + 1}</td>
							<td class="code">
								<Code text={line} language={language} />
							</td>
						</tr>
					))}
				</tbody>
			</table>
		</div>
	);
}
