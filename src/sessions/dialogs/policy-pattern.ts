import { RE2JS } from "re2js";

/**
 * The one place a user-supplied pattern (a session's policies, the operator's --approval-policies-file)
 * becomes a matcher, and it is never a JavaScript RegExp: V8's backtracking engine takes
 * exponential time on patterns as short as `\w*\w*\w*\w*!`, on the one thread every session shares.
 *
 * The engine is re2js (pinned 2.10.0), a pure-JS port of RE2: its automata (lazy DFA, one-pass,
 * bit-state, Pike VM) never backtrack, so matching costs at most (program size × text length).
 * Rejected alternatives: `re2` is native (a build, and its prebuilt download fails offline);
 * `re2-wasm` is unmaintained since 2021; V8's `--enable-experimental-regexp-engine` (`/l`) is a
 * process flag every entry point (npx, vitest workers, embedders) would have to pass, and it is
 * experimental. re2js refuses what cannot run in linear time (backreferences, lookarounds) as a
 * syntax error, so the pattern rules are simply "RE2 syntax", plus bounds on the program's size
 * that keep the (size × length) product small.
 */

/** A pattern's source, in characters. */
export const maxPatternChars = 200;
/** RE2 instructions in one compiled pattern (a 200-character literal needs about 200). */
export const maxProgramSize = 400;
/** RE2 instructions in all the patterns of one policy set (the session's, or the operator's file). */
export const maxSetProgramSize = 2000;
/** Text a pattern reads; a longer title or message is left to a person (see policies.ts). */
export const matchedChars = 4096;

/** A pattern the rules refuse, with the reason in words a client can act on. */
export class PatternError extends Error {}

/** Compiled patterns by source: policies are re-read for every dialog, compiling is the costly part. */
const cache = new Map<string, RE2JS>();
const maxCached = 1000;

/** The RE2 program for `source`, or a PatternError saying why the rules refuse it. */
export function compilePattern(source: string): RE2JS {
	const cached = cache.get(source);
	if (cached) return cached;
	if (source.length === 0 || source.length > maxPatternChars)
		throw new PatternError(`an RE2 pattern of 1 to ${maxPatternChars} characters`);
	let compiled: RE2JS;
	try {
		compiled = RE2JS.compile(source);
	} catch (error) {
		// re2js says "error parsing regexp: invalid or unsupported Perl syntax: `(?=`" and the like.
		throw new PatternError(`not RE2 syntax (${(error as Error).message})`);
	}
	const size = compiled.programSize();
	if (size > maxProgramSize)
		throw new PatternError(`an RE2 program of ${size} instructions, over the ${maxProgramSize} allowed`);
	if (cache.size >= maxCached) cache.delete(cache.keys().next().value as string);
	cache.set(source, compiled);
	return compiled;
}

/** Why the rules refuse `source`, or undefined when they accept it. */
export function patternProblem(source: string): string | undefined {
	try {
		compilePattern(source);
		return undefined;
	} catch (error) {
		if (error instanceof PatternError) return error.message;
		throw error;
	}
}

/** Instructions of an accepted pattern (0 for one the rules refuse: that is reported on its own). */
export function programSize(source: string): number {
	return patternProblem(source) === undefined ? compilePattern(source).programSize() : 0;
}

/**
 * Whether the whole of `text` matches (an anchored full match, RE2's FullMatch): a pattern that
 * names one command cannot be satisfied by a text that has something else around it.
 * undefined: the text is longer than a pattern reads, so no rule may decide on it.
 */
export function fullMatch(source: string, text: string): boolean | undefined {
	if (text.length > matchedChars) return undefined;
	return compilePattern(source).matches(text);
}
