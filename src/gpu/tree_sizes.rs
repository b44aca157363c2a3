//! How large the shade trees' levels are from one frame to the next (`GpuCore::shade_trees`
//! in `gpu::whitted`): "report the needed size, then retry" for the levels' child counts. A
//! frame's levels take their room from the last frames' counts and are recorded without a wait;
//! the frame's end reads the counts and finds any level that outgrew its room, and the frame is
//! then rendered again with each level's count read as it comes.

use super::pool::GpuBuffer;

/// How large an earlier pass's shade-tree levels were: the room a later pass's levels get, so
/// that they are recorded without waiting for each level's child count ("report the needed
/// size, then retry": a level that outgrows its room is found at the frame's end, and the frame
/// is rendered again with the levels' counts read as they come).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TreeSizes {
    /// The `film.max_depth` the sizes were measured at (another depth reads the counts).
    pub(super) max_depth: u32,
    /// Per level after the camera's, up to the last that held any: its nodes and its pass's
    /// camera rays, for the pass where that level's share of the camera rays was largest.
    levels: Vec<(u64, u64)>,
}

/// The room of a level of `count` nodes in a pass of `of_camera` camera rays, in a pass of
/// `camera` camera rays whose level before has room `parent`: an eighth more than the same
/// share of the camera rays and 256 nodes (for the share to grow from one frame to the next),
/// at most twice the parent's room (a node has two children at most). Integer arithmetic, so
/// that a frame sized from the last frame's counts asks for the very buffers the last frame
/// had (their bind groups then come from the cache).
fn level_room(count: u64, of_camera: u64, camera: u64, parent: u64) -> u64 {
    let share = (count as u128 * camera as u128 * 9).div_ceil(of_camera.max(1) as u128 * 8);
    (share as u64).saturating_add(TAIL_ROOM).min(2 * parent)
}

/// The room of each of the [`TAIL_LEVELS`] levels past the last that held rays (up to
/// `film.max_depth`): a bounce that appears from one frame to the next, deep in a glass, then
/// fits without the frame going again.
const TAIL_ROOM: u64 = 256;
const TAIL_LEVELS: usize = 2;

/// A tail level's room after a level of room `parent`: [`TAIL_ROOM`], at most twice `parent`.
fn tail_room(parent: u64) -> u64 {
    TAIL_ROOM.min(2 * parent)
}

/// The room of the level after one of room `parent` that spawned `children` (read), in a pass
/// of `camera` camera rays, `empty` levels after the first without rays ([`level_room`]; the
/// tail's, or none past it, when there are no children).
pub(super) fn counted_room(children: u64, camera: u64, parent: u64, empty: usize) -> u64 {
    match children {
        0 if empty < TAIL_LEVELS => tail_room(parent),
        0 => 0,
        n => level_room(n, camera, camera, parent),
    }
}

impl TreeSizes {
    /// The room of each level after the camera's, up to `max_depth`, for a pass of `camera`
    /// rays: the rooms of the levels that held rays, then [`TAIL_LEVELS`] of [`TAIL_ROOM`] (at
    /// most twice the level before's), as the levels' counts give them
    /// (`GpuCore::shade_trees`); none past those.
    pub(super) fn rooms(&self, camera: u64) -> Vec<u64> {
        let mut parent = camera;
        let levels = (self.levels.len() + TAIL_LEVELS).min(self.max_depth as usize);
        (0..levels)
            .map(|level| {
                parent = match self.levels.get(level) {
                    Some(&(count, of_camera)) => level_room(count, of_camera, camera, parent),
                    None => tail_room(parent),
                };
                parent
            })
            .collect()
    }

    /// The sizes of a frame's passes, or the first level that outgrew its room. `words` holds
    /// the device counts of [`TreeCounts::device_words`], in order.
    pub(super) fn of_passes(
        max_depth: u32,
        passes: &[TreeCounts],
        words: &[u32],
    ) -> Result<(TreeSizes, TreeTotals), Outgrown> {
        let mut words = words.iter();
        let mut levels: Vec<(u64, u64)> = Vec::new();
        let mut totals = TreeTotals::default();
        for pass in passes {
            totals.nodes += pass.camera;
            totals.sized_passes += u64::from(pass.sized);
            for (level, (count, room)) in pass.children.iter().enumerate() {
                let children = match count {
                    LevelCount::Known(n) => *n,
                    // Every device count has its word (`device_words`); a missing one is
                    // taken as more than any room.
                    LevelCount::Device(_) => words.next().map_or(u64::MAX, |&w| w as u64),
                };
                if children > *room {
                    return Err(Outgrown {
                        level: level + 1,
                        children,
                        room: *room,
                    });
                }
                totals.nodes += children;
                totals.specular_rays += children;
                let this = (children, pass.camera.max(1));
                match levels.get_mut(level) {
                    Some(l) => *l = larger_share(*l, this),
                    None => levels.push(this),
                }
            }
        }
        while levels.last().is_some_and(|l| l.0 == 0) {
            levels.pop();
        }
        Ok((TreeSizes { max_depth, levels }, totals))
    }
}

/// The shade-tree sizes of the last [`TreeHistory::FRAMES`] frames: a frame's levels take
/// their room from the largest share each level had among them, so that an animation whose
/// specular share comes and goes (an object passing in front of a mirror) does not render
/// again each time the share comes back.
#[derive(Clone, Debug, Default)]
pub(super) struct TreeHistory {
    recent: std::collections::VecDeque<TreeSizes>,
}

impl TreeHistory {
    const FRAMES: usize = 8;

    /// Adds a frame's sizes (forgetting those measured at another depth and the oldest).
    pub(super) fn push(&mut self, sizes: TreeSizes) {
        self.recent.retain(|s| s.max_depth == sizes.max_depth);
        if self.recent.len() == Self::FRAMES {
            self.recent.pop_front();
        }
        self.recent.push_back(sizes);
    }

    /// Each level's largest share over the frames kept, if any.
    pub(super) fn sizes(&self) -> Option<TreeSizes> {
        let mut frames = self.recent.iter();
        let mut merged = frames.next()?.clone();
        for s in frames {
            for (level, &this) in s.levels.iter().enumerate() {
                match merged.levels.get_mut(level) {
                    Some(l) => *l = larger_share(*l, this),
                    None => merged.levels.push(this),
                }
            }
        }
        Some(merged)
    }
}

/// Of two (nodes, camera rays), the one with the larger share (compared crosswise).
fn larger_share(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    if b.0 as u128 * a.1 as u128 > a.0 as u128 * b.1 as u128 {
        b
    } else {
        a
    }
}

/// A shade-tree level whose rays outgrew the room an earlier frame's sizes gave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Outgrown {
    /// The level (the camera's is 0).
    pub(super) level: usize,
    pub(super) children: u64,
    pub(super) room: u64,
}

/// The nodes and specular rays of a frame's shade trees, from their counts, and the passes
/// whose levels took their room from an earlier frame's sizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct TreeTotals {
    pub(super) nodes: u64,
    pub(super) specular_rays: u64,
    pub(super) sized_passes: u64,
}

/// A level's child count: read while the trees were recorded, or a count on the device read at
/// the frame's end (its first word).
pub(super) enum LevelCount {
    Known(u64),
    Device(GpuBuffer),
}

/// What a pass's shade trees leave for the frame's end to check: the camera rays, and per
/// level that spawned children, their count with the room the next level had (0 past the
/// last level recorded).
pub(super) struct TreeCounts {
    pub(super) camera: u64,
    pub(super) children: Vec<(LevelCount, u64)>,
    /// Whether the levels took their room from an earlier frame's sizes.
    pub(super) sized: bool,
}

impl TreeCounts {
    /// The device counts to read at the frame's end, in the order
    /// [`TreeSizes::of_passes`] takes their words.
    pub(super) fn device_words(passes: &[TreeCounts]) -> Vec<(&GpuBuffer, u64)> {
        passes
            .iter()
            .flat_map(|p| &p.children)
            .filter_map(|(count, _)| match count {
                LevelCount::Device(b) => Some((b, 0)),
                LevelCount::Known(_) => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{counted_room, level_room, LevelCount, TreeCounts, TreeHistory, TreeSizes};

    fn pass(camera: u64, children: &[u64]) -> TreeCounts {
        let mut parent = camera;
        let mut empty = 0;
        let children = children
            .iter()
            .map(|&n| {
                let room = counted_room(n, camera, parent, empty);
                empty += usize::from(n == 0);
                parent = room;
                (LevelCount::Known(n), room)
            })
            .collect();
        TreeCounts {
            camera,
            children,
            sized: false,
        }
    }

    /// The rooms a frame takes from the last frame's counts are the rooms those counts gave the
    /// last frame's levels, the tail's past the last level with rays included, so that the frame
    /// asks for the same buffers.
    #[test]
    fn rooms_from_the_last_frames_counts_are_the_rooms_those_counts_gave() {
        let counts = [13_001, 9_377, 2_210, 17, 0, 0, 0];
        let (sizes, totals) = TreeSizes::of_passes(8, &[pass(76_800, &counts)], &[]).unwrap();
        let rooms: Vec<u64> = pass(76_800, &counts).children.iter().map(|c| c.1).collect();
        assert_eq!(sizes.rooms(76_800), rooms[..6]);
        assert_eq!(rooms[4..], [256, 256, 0]);
        // At depth 5, one level of the tail.
        let (sizes, _) = TreeSizes::of_passes(5, &[pass(76_800, &counts[..5])], &[]).unwrap();
        assert_eq!(sizes.rooms(76_800), rooms[..5]);
        assert_eq!(totals.nodes, 76_800 + 13_001 + 9_377 + 2_210 + 17);
        assert_eq!(totals.specular_rays, 13_001 + 9_377 + 2_210 + 17);
    }

    /// The history keeps each level's largest share of the last eight frames: a share that came
    /// back within them finds its room; one eight frames old is forgotten, and so are sizes
    /// measured at another depth.
    #[test]
    fn the_history_keeps_each_levels_largest_share_of_the_last_eight_frames() {
        let sizes = |depth: u32, counts: &[u64]| {
            TreeSizes::of_passes(depth, &[pass(1000, counts)], &[])
                .unwrap()
                .0
        };
        let mut history = TreeHistory::default();
        assert!(history.sizes().is_none());
        history.push(sizes(3, &[300, 20, 0]));
        for frame in 1..=8 {
            history.push(sizes(3, &[100, 40, 5]));
            let kept = history.sizes().unwrap();
            let first = if frame < 8 { (300, 1000) } else { (100, 1000) };
            assert_eq!(
                kept.levels,
                vec![first, (40, 1000), (5, 1000)],
                "frame {frame}"
            );
        }
        history.push(sizes(4, &[7, 0, 0, 0]));
        assert_eq!(history.sizes().unwrap().levels, vec![(7, 1000)]);
    }

    /// A level's room is an eighth more than its count and 256 nodes, and never more than twice
    /// the room of the level before; a pass with half the camera rays gets half the share.
    #[test]
    fn a_levels_room_has_an_eighth_more_and_at_most_twice_its_parents() {
        assert_eq!(level_room(1000, 4000, 4000, 4000), 1125 + 256);
        assert_eq!(level_room(1000, 4000, 2000, 4000), 563 + 256);
        assert_eq!(level_room(7999, 4000, 4000, 4000), 8000);
        assert_eq!(level_room(1, 4000, 4000, 100), 200);
    }

    /// Sizes of several passes keep each level's largest share of its pass's camera rays; a
    /// level whose children outgrew their room is named (the frame goes again).
    #[test]
    fn passes_keep_each_levels_largest_share_and_an_outgrown_room_is_named() {
        let (sizes, _) =
            TreeSizes::of_passes(5, &[pass(1000, &[100, 10]), pass(500, &[80, 2])], &[]).unwrap();
        assert_eq!(sizes.levels, vec![(80, 500), (10, 1000)]);
        let outgrown = TreeCounts {
            camera: 1000,
            children: vec![(LevelCount::Known(100), 381), (LevelCount::Known(400), 381)],
            sized: true,
        };
        let error = TreeSizes::of_passes(5, &[outgrown], &[]).unwrap_err();
        assert_eq!(
            (error.level, error.children, error.room),
            (2, 400, 381),
            "level 2's 400 rays in a room of 381"
        );
    }
}
