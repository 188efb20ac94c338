import { useLayoutEffect, useRef } from "preact/hooks";
import { renderMarkdown } from "./sink.ts";

/** Assistant text as sanitized Markdown (through the one sink). */
export function Markdown({ text }: { text: string }) {
	const ref = useRef<HTMLDivElement>(null);
	useLayoutEffect(() => {
		if (ref.current) renderMarkdown(ref.current, text);
	}, [text]);
	return <div class="md" ref={ref} />;
}
