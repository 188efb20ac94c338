/**
 * The few tar records a folder needs (POSIX ustar, with a pax header for what ustar cannot hold:
 * long or non-ASCII names, sizes of 8 GiB and more). Enough for GNU tar, bsdtar and Python's tarfile.
 */
export type TarType = "file" | "dir" | "symlink";

export interface TarEntry {
	path: string;
	type: TarType;
	size: number;
	mode: number;
	mtime: number;
	linkTarget?: string;
}

const typeFlag: Record<TarType, string> = { file: "0", dir: "5", symlink: "2" };
export const block = 512;

function octal(value: number, width: number): string {
	return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

function rawHeader(
	name: string,
	size: number,
	flag: string,
	entry: Pick<TarEntry, "mode" | "mtime">,
	link = "",
): Buffer {
	const header = Buffer.alloc(block);
	header.write(name, 0, 100, "utf8");
	header.write(octal(entry.mode & 0o7777, 8), 100, "ascii");
	header.write(octal(0, 8), 108, "ascii");
	header.write(octal(0, 8), 116, "ascii");
	header.write(octal(size, 12), 124, "ascii");
	header.write(octal(Math.max(0, Math.floor(entry.mtime)), 12), 136, "ascii");
	header.write("        ", 148, "ascii");
	header.write(flag, 156, "ascii");
	header.write(link, 157, 100, "utf8");
	header.write("ustar\u000000", 257, "binary");
	let sum = 0;
	for (const byte of header) sum += byte;
	header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
	return header;
}

const fitsUstar = (text: string) => Buffer.byteLength(text) < 100 && /^[\x20-\x7e]*$/.test(text);

/** One pax record: `LEN key=value\n`, where LEN counts itself. */
function paxRecord(key: string, value: string): string {
	const body = ` ${key}=${value}\n`;
	let length = Buffer.byteLength(body);
	while (String(length).length + Buffer.byteLength(body) !== length)
		length = String(length).length + Buffer.byteLength(body);
	return `${length}${body}`;
}

/** The header block(s) of an entry; its data (file bytes, padded to 512) follows. */
export function headerOf(entry: TarEntry): Buffer {
	const name = entry.type === "dir" ? `${entry.path}/` : entry.path;
	const link = entry.linkTarget ?? "";
	const size = entry.type === "file" ? entry.size : 0;
	const pax: string[] = [];
	if (!fitsUstar(name)) pax.push(paxRecord("path", name));
	if (link && !fitsUstar(link)) pax.push(paxRecord("linkpath", link));
	if (size >= 0o77777777777) pax.push(paxRecord("size", String(size)));
	const main = rawHeader(
		fitsUstar(name) ? name : "pax-long-name",
		size >= 0o77777777777 ? 0 : size,
		typeFlag[entry.type],
		entry,
		fitsUstar(link) ? link : "",
	);
	if (pax.length === 0) return main;
	const data = Buffer.from(pax.join(""), "utf8");
	return Buffer.concat([rawHeader("PaxHeader", data.length, "x", entry), data, padding(data.length), main]);
}

export const padding = (size: number) => Buffer.alloc((block - (size % block)) % block);

/** Two zero blocks end an archive. */
export const trailer = () => Buffer.alloc(block * 2);
