/** A unified diff, one line per element, marked added/removed for colour (and for screen readers by its +/−). */
export function Diff({ text }: { text: string }) {
	const lines = text.split("\n");
	return (
		<pre class="diff">
			{lines.map((line, i) => {
				const kind =
					line.startsWith("+") && !line.startsWith("+++")
						? "add"
						: line.startsWith("-") && !line.startsWith("---")
							? "del"
							: line.startsWith("@@")
								? "hunk"
								: "";
				return (
					<span key={i} class={kind}>
						{line}
						{"\n"}
					</span>
				);
			})}
		</pre>
	);
}
