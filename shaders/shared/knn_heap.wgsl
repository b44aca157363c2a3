// The heap size of a kNN kernel whose k comes at run time (shared/knn.wgsl): 64 entries, or
// KNN_MAX_K = 128 when the host compiles it with KNN_HEAP_128 for a larger k. The smaller heap
// is the one a frame uses (k = 64 and below): half the private memory of every invocation.
// One point of a leaf per iteration, and the queue offered every 16 iterations
// (shared/knn.wgsl, knn_enqueue): of the shapes measured on the lent H100, the fastest for the
// Morton-ordered density queries of a frame (docs/performance.md).
const KNN_LEAF_CHUNK: u32 = 1u;
const KNN_FLUSH_EVERY: u32 = 16u;
//!if KNN_HEAP_128
const KNN_HEAP_SIZE: u32 = KNN_MAX_K;
const KNN_HEAP_DEPTH: u32 = 7u;
//!else
const KNN_HEAP_SIZE: u32 = 64u;
const KNN_HEAP_DEPTH: u32 = 6u;
//!endif
