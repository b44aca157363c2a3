// Between two levels of the collapse, one invocation: the next level is the entries queued
// since the last one began (breadth first, as the CPU twin lays them out level by level, the
// batch's trees together), and the arguments of its dispatch are written at `args[3 · level]`.
// After the last level (`finish` set) it only records whether entries were left unprocessed.
// Twin: the queue of caustica::accel::wide::collapse_to_cwbvh.
//!include "bvh/collapse_common.wgsl"

struct LevelParams {
    // Workgroup size of collapse_node.wgsl, and the most workgroups a dimension may have.
    workgroup_size: u32,
    max_groups: u32,
    // 1: after the last level.
    finish: u32,
    _pad: u32,
}

@group(0) @binding(0) var<uniform> level_params: LevelParams;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let begin = state[STATE_END];
    let end = state[STATE_QUEUE];
    if level_params.finish != 0u {
        if end > begin {
            state[STATE_UNFINISHED] = 1u;
        }
        return;
    }
    let level = state[STATE_LEVEL];
    state[STATE_LEVEL] = level + 1u;
    state[STATE_BEGIN] = begin;
    state[STATE_END] = end;
    let items = end - begin;
    let size = max(level_params.workgroup_size, 1u);
    let groups = min(items / size + select(0u, 1u, items % size != 0u), level_params.max_groups);
    if 3u * level + 2u < arrayLength(&args) {
        args[3u * level] = groups;
        args[3u * level + 1u] = 1u;
        args[3u * level + 2u] = 1u;
    }
}
