//! Property tests (proptest) of the frame arithmetic a render farm leans on: `--frames` lists,
//! shards of a job and the frames `caustica check` samples from a long range.

use caustica::scene::FrameRange;
use caustica::Shard;
use proptest::prelude::*;

fn range(first: i64, len: u64) -> FrameRange {
    FrameRange {
        first,
        last: first + len as i64 - 1,
        ..Default::default()
    }
}

proptest! {
    /// A shard's count, computed without walking the frames, is how many frames `Shard::of`
    /// hands it, and the shards of a job split it whole.
    #[test]
    fn a_shards_counted_frames_are_the_ones_it_is_handed(
        total in 0u64..500,
        count in 1u64..40,
        index_seed in 0u64..1000,
    ) {
        let index = index_seed % count;
        let shard = Shard { index, count };
        let handed = shard.of(0..total as i64).count() as u64;
        prop_assert_eq!(shard.count_of(total), handed);
        let all: u64 = (0..count).map(|i| Shard { index: i, count }.count_of(total)).sum();
        prop_assert_eq!(all, total);
    }

    /// The frames `check` samples are at most the count asked, strictly increasing, inside the
    /// range, and hold its first and last frame; a range no longer than the count is sampled
    /// whole.
    #[test]
    fn sampled_frames_are_ordered_inside_the_range_and_hold_both_ends(
        first in -1_000_000_000_000_000i64..1_000_000_000_000_000,
        len in 1u64..2_000_000_000_000_000,
        count in 2u64..2000,
    ) {
        let r = range(first, len);
        prop_assert_eq!(r.len(), len);
        let frames = r.sample(count);
        prop_assert!(frames.len() as u64 <= count);
        prop_assert_eq!(frames.len() as u64, len.min(count));
        prop_assert_eq!(frames[0], r.first);
        prop_assert_eq!(*frames.last().unwrap(), r.last);
        prop_assert!(frames.windows(2).all(|w| w[0] < w[1]));
    }

    /// `--frames` lists: every item's frames, each once, in order, whatever the overlaps.
    #[test]
    fn a_frame_list_is_the_sorted_union_of_its_items(
        items in prop::collection::vec((-50i64..50, 0i64..30, 1i64..7), 1..6),
    ) {
        let text = items
            .iter()
            .map(|(a, len, step)| format!("{a}..{}:{step}", a + len))
            .collect::<Vec<_>>()
            .join(",");
        let frames = caustica::parse_frames(&text).unwrap();
        let mut expected: Vec<i64> = items
            .iter()
            .flat_map(|&(a, len, step)| (a..=a + len).step_by(step as usize))
            .collect();
        expected.sort();
        expected.dedup();
        prop_assert_eq!(frames, expected);
    }
}
