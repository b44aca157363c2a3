//! Christensen's precomputed irradiance on the GPU (`render::irradiance_photons` describes it;
//! the CPU twin is `cpu::irradiance_photons`): the global map's irradiance photons with their
//! kd-tree, and the lookup that gives each gather hit its irradiance.

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kdtree::{GpuKdTree, KdTreeBuilder};
use super::kernel::{
    read_buffer, run_deferred_checks, storage_buffer, storage_buffer_sized, uniform_buffer, Checks,
    Kernel,
};
use super::knn::{check_k, position_normal_queries, status_error, KnnKernel};
use super::maps::{GpuPhotonMap, MapTree};
use super::pool::GpuBuffer;
use super::prims::Primitives;
use crate::accel::photon_estimate::PhotonRecord;
use crate::render::irradiance_photons::irradiance_photon_count;
use crate::render::photons::{EstimateSettings, PhotonPassStats};
use glam::Vec3;

/// The parameters of both kernels. Twin of `PhotonLookupParams` in
/// `shaders/shared/gather_types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PhotonLookupParams {
    /// Invocations: irradiance photons to make, or queries to answer.
    pub count: u32,
    /// Every `stride`-th photon of the global map is an irradiance photon.
    pub stride: u32,
    /// The irradiance photons (the lookup's bound on a found index).
    pub photon_count: u32,
    /// The squared radius of the estimates and the lookups.
    pub max_dist2: f32,
    /// The estimate's photons (`photons { knn }`), filter code and cone constant.
    pub k: u32,
    pub filter_code: u32,
    pub cone_k: f32,
    pub _pad0: u32,
}

/// The kernels of `shaders/gather/irradiance_photons.wgsl` and `photon_lookup.wgsl`.
pub struct IrradiancePhotonKernels {
    select: KnnKernel,
    lookup: Kernel,
}

/// The global map's irradiance photons on the device.
pub struct GpuIrradiancePhotons {
    pub count: u32,
    /// The normals (one `vec4` each).
    normals: GpuBuffer,
    /// The irradiance at each (xyz).
    irradiance: GpuBuffer,
    tree: GpuKdTree,
    max_dist2: f32,
}

impl IrradiancePhotonKernels {
    pub fn new(ctx: &GpuContext) -> Result<IrradiancePhotonKernels, GpuError> {
        // Without naga's runtime checks: every index the kernels use is bounded by a check of
        // their own (those of shared/knn.wgsl and shared/photon_estimate.wgsl, and their own
        // arrays' lengths), and tests/irradiance_photons.rs compares them with the CPU twin.
        let kernel = |file: &str, defines: &[&str]| {
            Kernel::new(ctx, &format!("gather/{file}"), defines, Checks::Unchecked)
        };
        Ok(IrradiancePhotonKernels {
            // Both kernels' searches offer only some photons (`knn_accept`).
            select: KnnKernel::new(
                ctx,
                "gather/irradiance_photons.wgsl",
                &["KNN_FILTER"],
                Checks::Unchecked,
            )?,
            lookup: kernel("photon_lookup.wgsl", &["KNN_FILTER"])?,
        })
    }

    /// Photons `0, stride, 2·stride, …` of `global` with the flux density the map gives at each
    /// on the side of its normal, and their kd-tree; `None` for a map without photons.
    ///
    /// The estimates are made in the Morton order of the photons' positions in `cube` (low
    /// corner, side: the scene's bounds), so that neighbouring invocations search the same part
    /// of the tree; each is written at its own index, so the order changes no value.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn precompute(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        builder: &KdTreeBuilder,
        global: &MapTree,
        stride: u32,
        settings: &EstimateSettings,
        cube: (Vec3, f32),
    ) -> Result<Option<GpuIrradiancePhotons>, GpuError> {
        let count = irradiance_photon_count(global.map.count, stride);
        if count == 0 {
            return Ok(None);
        }
        check_k(settings.k as u32)?;
        let normals = storage_buffer_sized(ctx, "irradiance photon normals", count as u64 * 16)?;
        let points = storage_buffer_sized(ctx, "irradiance photon points", count as u64 * 16)?;
        let irradiance = storage_buffer_sized(ctx, "irradiance photons", count as u64 * 16)?;
        let status = storage_buffer(ctx, "irradiance photon status", &[0u32])?;
        let params = uniform_buffer(
            ctx,
            "irradiance photon params",
            &PhotonLookupParams {
                count,
                stride,
                photon_count: count,
                max_dist2: settings.max_dist2,
                k: settings.k as u32,
                filter_code: settings.filter.code(),
                cone_k: settings.filter.cone_k(),
                ..Default::default()
            },
        );
        let mut encoder = Encoder::new(ctx);
        let order = prims.morton_order(
            ctx,
            &mut encoder,
            &global.map.positions,
            stride,
            count,
            cube,
        )?;
        let select = self.select.for_k(ctx, settings.k as u32)?;
        let bind = select.bind(
            ctx,
            &[
                ("order", &order),
                ("params", &params),
                ("kd_words", &global.tree.words),
                ("kd_points", &global.tree.points),
                ("kd_leaf_points", &global.tree.leaf_points),
                ("kd_photons", &global.map.records),
                ("photon_normals", &normals),
                ("photon_points", &points),
                ("photon_irradiance", &irradiance),
                ("status", &status),
            ],
        )?;
        select.dispatch(&mut encoder, &bind, select.grid_for(ctx, count as u64));
        ctx.submit([encoder.finish()]);
        let tree = builder.build(ctx, &points, count)?;
        ctx.defer_status_check(&status, status_error);
        Ok(Some(GpuIrradiancePhotons {
            count,
            normals,
            irradiance,
            tree,
            max_dist2: settings.max_dist2,
        }))
    }

    /// The irradiance at each of `query_count` (position, normal) queries (two `vec4` each):
    /// the nearest agreeing irradiance photon's within the radius, zero where there is none or
    /// `photons` is `None`. One `vec4` per query. The queries are answered in the Morton order
    /// of their positions in `cube`, each written at its own index.
    pub fn lookup(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        photons: Option<&GpuIrradiancePhotons>,
        queries: &GpuBuffer,
        query_count: u32,
        cube: (Vec3, f32),
    ) -> Result<GpuBuffer, GpuError> {
        let out = storage_buffer_sized(
            ctx,
            "precomputed irradiance",
            query_count.max(1) as u64 * 16,
        )?;
        let Some(photons) = photons.filter(|_| query_count > 0) else {
            let mut encoder = Encoder::new(ctx);
            encoder.clear_buffer(&out, 0, None);
            ctx.submit([encoder.finish()]);
            return Ok(out);
        };
        let status = storage_buffer(ctx, "lookup status", &[0u32])?;
        let params = uniform_buffer(
            ctx,
            "photon lookup params",
            &PhotonLookupParams {
                count: query_count,
                stride: 0,
                photon_count: photons.count,
                max_dist2: photons.max_dist2,
                ..Default::default()
            },
        );
        let mut encoder = Encoder::new(ctx);
        let order = prims.morton_order(ctx, &mut encoder, queries, 2, query_count, cube)?;
        let bind = self.lookup.bind(
            ctx,
            &[
                ("order", &order),
                ("params", &params),
                ("kd_words", &photons.tree.words),
                ("kd_points", &photons.tree.points),
                ("kd_leaf_points", &photons.tree.leaf_points),
                ("queries", queries),
                ("photon_normals", &photons.normals),
                ("photon_irradiance", &photons.irradiance),
                ("out_density", &out),
                ("status", &status),
            ],
        )?;
        self.lookup.dispatch(
            &mut encoder,
            &bind,
            self.lookup.grid_for(ctx, query_count as u64),
        );
        ctx.submit([encoder.finish()]);
        ctx.defer_status_check(&status, status_error);
        Ok(out)
    }

    /// The global map `records` uploaded (its tree built by `builder`), its irradiance photons
    /// precomputed, and each `(position, normal)` of `queries` looked up, read back (tests and
    /// benchmarks).
    #[allow(clippy::too_many_arguments)]
    pub fn lookup_vec(
        &self,
        ctx: &GpuContext,
        builder: &KdTreeBuilder,
        records: &[PhotonRecord],
        stride: u32,
        settings: &EstimateSettings,
        queries: &[(Vec3, Vec3)],
    ) -> Result<Vec<Vec3>, GpuError> {
        let count = u32::try_from(records.len())
            .map_err(|_| GpuError::Device("more photons than a kd-tree holds".into()))?;
        let positions: Vec<[f32; 4]> = records
            .iter()
            .map(|r| [r.position[0], r.position[1], r.position[2], 0.0])
            .collect();
        let positions = storage_buffer(ctx, "photon positions", &positions)?;
        let tree = builder.build(ctx, &positions, count)?;
        let global = MapTree {
            map: GpuPhotonMap {
                records: storage_buffer(ctx, "photon records", records)?,
                positions,
                count,
                stats: PhotonPassStats::default(),
            },
            tree,
        };
        let (lo, hi) = records.iter().fold(
            (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
            |(lo, hi), r| {
                let p = Vec3::from_array(r.position);
                (lo.min(p), hi.max(p))
            },
        );
        let cube = (lo, (hi - lo).max_element().max(0.0));
        let prims = builder.prims();
        let photons = self.precompute(ctx, prims, builder, &global, stride, settings, cube)?;
        let query_buffer =
            storage_buffer(ctx, "lookup queries", &position_normal_queries(queries))?;
        let n = queries.len() as u32;
        let out = self.lookup(ctx, prims, photons.as_ref(), &query_buffer, n, cube)?;
        run_deferred_checks(ctx)?;
        let values: Vec<[f32; 4]> = read_buffer(ctx, &out, queries.len())?;
        Ok(values.iter().map(|v| Vec3::new(v[0], v[1], v[2])).collect())
    }
}
