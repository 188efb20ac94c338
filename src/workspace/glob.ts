import { RE2JS } from "re2js";

/**
 * A `--glob`-style pattern (`*`, `**`, `?`, `[…]`, `{a,b}`) as an RE2 program: user patterns run
 * in a linear-time engine (DESIGN, trust model). A pattern without `/` matches the base name, as
 * ripgrep's `-g` does.
 */
export function globMatcher(glob: string): (path: string) => boolean {
	const anchored = glob.includes("/");
	const re = RE2JS.compile(`^${globToRegex(glob.replace(/^\//, ""))}$`);
	return (path) => re.matches(anchored ? path : path.slice(path.lastIndexOf("/") + 1));
}

function globToRegex(glob: string): string {
	let out = "";
	let braces = 0;
	for (let i = 0; i < glob.length; i++) {
		const ch = glob[i] as string;
		if (ch === "*") {
			if (glob[i + 1] === "*") {
				const slash = glob[i + 2] === "/";
				out += slash ? "(?:.*/)?" : ".*";
				i += slash ? 2 : 1;
			} else out += "[^/]*";
		} else if (ch === "?") out += "[^/]";
		else if (ch === "[") {
			const end = glob.indexOf("]", i + 1);
			if (end < 0) out += "\\[";
			else {
				const body = glob
					.slice(i + 1, end)
					.replace(/^!/, "^")
					.replace(/\\/g, "\\\\");
				out += `[${body}]`;
				i = end;
			}
		} else if (ch === "{") {
			braces++;
			out += "(?:";
		} else if (ch === "}" && braces > 0) {
			braces--;
			out += ")";
		} else if (ch === "," && braces > 0) out += "|";
		else out += ch.replace(/[.*+?^$()|[\]\\{}]/g, "\\$&");
	}
	return out + ")".repeat(braces);
}
