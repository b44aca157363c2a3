// The heap size of a kNN kernel whose k comes at run time (shared/knn.wgsl): 64 entries, or
// KNN_MAX_K = 128 when the host compiles it with KNN_HEAP_128 for a larger k. The smaller heap
// is the one a frame uses (k = 64 and below): half the private memory of every invocation.
//!if KNN_HEAP_128
const KNN_HEAP_SIZE: u32 = KNN_MAX_K;
const KNN_HEAP_DEPTH: u32 = 7u;
//!else
const KNN_HEAP_SIZE: u32 = 64u;
const KNN_HEAP_DEPTH: u32 = 6u;
//!endif
