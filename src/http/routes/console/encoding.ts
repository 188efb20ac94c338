/**
 * Which of the console's bodies to send for an `Accept-Encoding` (RFC 9110 §12.5.3): brotli before
 * gzip before the file as it is, each only when its quality is above 0 (by name, or by `*` when not
 * named); `identity` is always there unless refused, and when every choice is refused the file
 * goes as it is anyway (a 406 for a page would help nobody).
 */
export type Encoding = "br" | "gzip" | "identity";

export function chooseEncoding(header: string | undefined): Encoding {
	if (!header) return "identity";
	const quality = new Map<string, number>();
	for (const part of header.split(",")) {
		const [name, ...params] = part.trim().toLowerCase().split(";");
		if (!name) continue;
		let q = 1;
		for (const p of params) {
			const m = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/.exec(p);
			if (m) q = Number(m[1]);
		}
		quality.set(name.trim(), q);
	}
	const of = (name: string) => quality.get(name) ?? (name === "identity" ? undefined : quality.get("*")) ?? 0;
	for (const name of ["br", "gzip"] as const) if (of(name) > 0) return name;
	// x-gzip is gzip's old name (RFC 9110 asks that it be taken as gzip).
	if ((quality.get("x-gzip") ?? 0) > 0) return "gzip";
	return "identity";
}
