// Fixed-size byte slabs that are used again once given back: the event log's storage and the SSE
// batches take them, so a flood makes no new external memory per event or batch. (New external
// memory is what makes V8 collect: a scavenge for "external memory pressure" every ~30 ms of a 2 KB
// flood, and mark-compacts for what outlived them; BENCHMARKS.md, fourth pass.)

export const slabBytes = 128 * 1024;
/** Idle slabs kept for later: 8 MiB at most. */
const maxFree = 64;
const free: ArrayBuffer[] = [];
/** Only slabs made here go back: any other buffer is left to the collector. */
const ours = new WeakSet<ArrayBufferLike>();

export function takeSlab(): ArrayBuffer {
	let slab = free.pop();
	if (slab === undefined) {
		slab = new ArrayBuffer(slabBytes);
		ours.add(slab);
	}
	return slab;
}

/** Nothing reads `slab` any more (a view's `.buffer` will do); a foreign buffer is ignored. */
export function giveSlab(slab: ArrayBufferLike): void {
	if (ours.has(slab) && free.length < maxFree) free.push(slab as ArrayBuffer);
}
