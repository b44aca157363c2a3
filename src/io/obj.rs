//! OBJ meshes, split by the materials of their MTL libraries (read by [`super::mtl`]).
//!
//! Read here rather than through `tobj`: tobj loses texture coordinates file-wide (or lends a
//! corner its neighbour's) when only some corners carry them, and neither its OBJ nor its MTL
//! errors say which line is at fault. This reader keeps what each face corner has, reports
//! malformed input at `file:line:col`, and warns once for each statement it does not understand.
//!
//! - Faces are grouped into one part per `usemtl` name, in the order of first use; faces before
//!   any `usemtl`, or naming a material no library defines, share a part without a material.
//! - Within a part, vertices are shared by value: corners with the same position, normal and
//!   texture coordinate become one vertex.
//! - When some corners of a part have normals (or UVs) and others do not, the others get their
//!   face's normal (or the face's own parameterisation: `(0,0) (1,0) (0,1)` for a triangle, the
//!   unit square for a quad), so nothing is lost for the faces that have them.
//! - Triangles stay triangles, quads stay quads (they may become VD patches), polygons with more
//!   corners become fans; points, lines and faces with fewer than three corners are skipped.
//! - Face corners must name vertices defined above them (negative indices count back from there).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use glam::{Vec2, Vec3};
use xxhash_rust::xxh3::Xxh3DefaultBuilder;

use super::mtl::read_mtl;
use super::wavefront_text::{at, number, rest_of_line, words, Lines, Warnings};
use super::IoError;
use crate::scene::{FileMaterial, MeshAsset, MeshData, MeshPart};

/// Corner attribute index meaning "not given".
const NONE: u32 = u32::MAX;

/// Reads an OBJ file and the MTL libraries it names (relative to `path`'s folder).
pub(crate) fn read_obj(reader: &mut dyn BufRead, path: &Path) -> Result<MeshAsset, IoError> {
    let mut obj = ObjReader::new(path);
    let mut lines = Lines::new(reader, path);
    let mut line = String::new();
    while let Some(number) = lines.next_line(&mut line)? {
        obj.statement(number, &line)?;
    }
    obj.finish()
}

/// The faces of one material, as corners `[position, uv, normal]` (`NONE` when not given).
#[derive(Default)]
struct PartFaces {
    material: Option<String>,
    corners: Vec<[u32; 3]>,
    arities: Vec<u32>,
    has_uvs: bool,
    has_normals: bool,
}

struct ObjReader<'p> {
    path: &'p Path,
    positions: Vec<Vec3>,
    uvs: Vec<Vec2>,
    normals: Vec<Vec3>,
    parts: Vec<PartFaces>,
    part_of: HashMap<Option<String>, usize>,
    current: Option<String>,
    /// The part of `current`, once a face has used it.
    current_part: Option<usize>,
    /// The corners of the face being read (kept to reuse its allocation).
    scratch: Vec<[u32; 3]>,
    /// `mtllib` names with the place that named them.
    libraries: Vec<(String, usize, usize)>,
    /// The first `usemtl` line of each material name.
    used_at: HashMap<String, (usize, usize)>,
    skipped: usize,
    /// The line of the first statement skipped.
    skipped_at: usize,
    /// Faces of three or more corners without an area (collinear or repeated corners), kept for
    /// a displacement that may give them one, and the line of the first.
    degenerate: usize,
    degenerate_at: usize,
    warnings: Warnings<'p>,
    /// Warnings about the MTL files, already placed.
    library_warnings: Vec<String>,
}

impl<'p> ObjReader<'p> {
    fn new(path: &'p Path) -> Self {
        ObjReader {
            path,
            positions: Vec::new(),
            uvs: Vec::new(),
            normals: Vec::new(),
            parts: Vec::new(),
            part_of: HashMap::new(),
            current: None,
            current_part: None,
            scratch: Vec::new(),
            libraries: Vec::new(),
            used_at: HashMap::new(),
            skipped: 0,
            skipped_at: 0,
            degenerate: 0,
            degenerate_at: 0,
            warnings: Warnings::new(path),
            library_warnings: Vec::new(),
        }
    }

    fn statement(&mut self, line: usize, text: &str) -> Result<(), IoError> {
        let mut w = words(text);
        let Some((column, keyword)) = w.next() else {
            return Ok(());
        };
        let path = self.path;
        match keyword {
            "v" => {
                let p = self.numbers(line, column, &mut w, 3, 3, "v")?;
                self.positions.push(Vec3::new(p[0], p[1], p[2]));
                check_count(path, line, self.positions.len())?;
            }
            "vt" => {
                let t = self.numbers(line, column, &mut w, 1, 2, "vt")?;
                self.uvs.push(Vec2::new(t[0], t[1]));
                check_count(path, line, self.uvs.len())?;
            }
            "vn" => {
                let n = self.numbers(line, column, &mut w, 3, 3, "vn")?;
                self.normals.push(Vec3::new(n[0], n[1], n[2]));
                check_count(path, line, self.normals.len())?;
            }
            "f" | "fo" => self.face(line, w)?,
            "p" | "l" => self.skip(line),
            "o" | "g" | "s" | "mg" => {}
            "usemtl" => {
                let name = rest_of_line(text);
                self.current_part = None;
                if name.is_empty() {
                    self.current = None;
                } else {
                    self.used_at
                        .entry(name.to_string())
                        .or_insert((line, column));
                    self.current = Some(name.to_string());
                }
            }
            "mtllib" => {
                let names = rest_of_line(text);
                let folder = path.parent().unwrap_or(Path::new(""));
                if folder.join(names).is_file() {
                    self.libraries.push((names.to_string(), line, column));
                } else {
                    for (c, name) in w {
                        self.libraries.push((name.to_string(), line, c));
                    }
                }
            }
            other => self.warnings.warn(
                format!("statement {other}"),
                line,
                column,
                format!("the OBJ statement \"{other}\" is not supported and was ignored"),
            ),
        }
        Ok(())
    }

    /// Between `min` and `max` numbers after the keyword (missing ones up to `max` are 0); more
    /// are allowed and ignored (`v x y z w`, vertex colours).
    fn numbers<'a>(
        &self,
        line: usize,
        column: usize,
        w: &mut impl Iterator<Item = (usize, &'a str)>,
        min: usize,
        max: usize,
        what: &str,
    ) -> Result<[f32; 3], IoError> {
        let mut out = [0.0f32; 3];
        for (i, slot) in out.iter_mut().enumerate().take(max) {
            match w.next() {
                Some(word) => *slot = number(self.path, line, word)?,
                None if i < min => {
                    return Err(at(
                        self.path,
                        line,
                        column,
                        format!("\"{what}\" needs {min} numbers"),
                    ))
                }
                None => break,
            }
        }
        Ok(out)
    }

    fn face<'a>(
        &mut self,
        line: usize,
        w: impl Iterator<Item = (usize, &'a str)>,
    ) -> Result<(), IoError> {
        let mut corners = std::mem::take(&mut self.scratch);
        corners.clear();
        for (column, word) in w {
            corners.push(self.corner(line, column, word)?);
        }
        if corners.len() < 3 {
            self.skip(line);
            self.scratch = corners;
            return Ok(());
        }
        // Corners index positions defined above this line (`corner` checked them).
        let area = newell_area(corners.iter().map(|c| self.positions[c[0] as usize]));
        // NaN (corners too far out) counts as no area.
        if area.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            if self.degenerate == 0 {
                self.degenerate_at = line;
            }
            self.degenerate += 1;
        }
        let index = match self.current_part {
            Some(i) => i,
            None => {
                let key = self.current.clone();
                let i = match self.part_of.get(&key) {
                    Some(&i) => i,
                    None => {
                        self.parts.push(PartFaces {
                            material: key.clone(),
                            ..PartFaces::default()
                        });
                        self.part_of.insert(key, self.parts.len() - 1);
                        self.parts.len() - 1
                    }
                };
                self.current_part = Some(i);
                i
            }
        };
        let part = &mut self.parts[index];
        part.has_uvs |= corners.iter().any(|c| c[1] != NONE);
        part.has_normals |= corners.iter().any(|c| c[2] != NONE);
        part.arities.push(corners.len() as u32);
        part.corners.extend_from_slice(&corners);
        self.scratch = corners;
        Ok(())
    }

    /// Counts a statement skipped at `line`.
    fn skip(&mut self, line: usize) {
        if self.skipped == 0 {
            self.skipped_at = line;
        }
        self.skipped += 1;
    }

    /// One face corner, `p`, `p/t`, `p//n` or `p/t/n`, as absolute indices.
    fn corner(&self, line: usize, column: usize, word: &str) -> Result<[u32; 3], IoError> {
        if word.bytes().filter(|&b| b == b'/').count() > 2 {
            return Err(at(
                self.path,
                line,
                column,
                format!("face corner \"{word}\" has more than three indices"),
            ));
        }
        let mut fields = word.split('/');
        let mut out = [NONE; 3];
        let counts = [self.positions.len(), self.uvs.len(), self.normals.len()];
        const WHAT: [&str; 3] = ["vertex", "texture coordinate", "normal"];
        for slot in 0..3 {
            let field = fields.next().unwrap_or("");
            if field.is_empty() {
                if slot == 0 {
                    return Err(at(
                        self.path,
                        line,
                        column,
                        format!("face corner \"{word}\" has no vertex index"),
                    ));
                }
                continue;
            }
            let index: i64 = field.parse().map_err(|_| {
                at(
                    self.path,
                    line,
                    column,
                    format!("face corner \"{word}\": \"{field}\" is not an index"),
                )
            })?;
            let count = counts[slot] as i64;
            let absolute = if index < 0 { count + index } else { index - 1 };
            if index == 0 || absolute < 0 || absolute >= count {
                return Err(at(
                    self.path,
                    line,
                    column,
                    format!(
                        "face corner \"{word}\": {} {index} is out of bounds ({count} defined above this line)",
                        WHAT[slot]
                    ),
                ));
            }
            out[slot] = absolute as u32;
        }
        Ok(out)
    }

    fn finish(mut self) -> Result<MeshAsset, IoError> {
        if self.skipped > 0 {
            log::warn!(
                "{}:{}: skipped {} points, lines and faces with fewer than three corners (the \
                 first on this line)",
                self.path.display(),
                self.skipped_at,
                self.skipped
            );
        }
        if self.degenerate > 0 {
            log::warn!(
                "{}:{}: {} faces have no area (collinear or repeated corners; the first on this \
                 line): they render as nothing unless displaced",
                self.path.display(),
                self.degenerate_at,
                self.degenerate
            );
        }
        if self.parts.is_empty() {
            let why = match self.skipped {
                0 => "it has no faces".to_string(),
                skipped => format!(
                    "it has no faces, only {skipped} points, lines and faces of fewer than three \
                     corners"
                ),
            };
            return Err(IoError::Format {
                path: self.path.to_path_buf(),
                message: format!("nothing to render: {why}"),
            });
        }
        let library = self.read_libraries()?;
        let mut materials: Vec<FileMaterial> = Vec::new();
        let mut parts = Vec::with_capacity(self.parts.len());
        let mut unnamed: Option<usize> = None;
        let faces = std::mem::take(&mut self.parts);
        // Faces whose material no library defines join the part without a material.
        let mut merged: Vec<PartFaces> = Vec::new();
        for part in faces {
            let known = part
                .material
                .as_ref()
                .filter(|name| library.contains_key(name.as_str()));
            if let (Some(name), None) = (&part.material, known) {
                let (line, column) = self.used_at.get(name).copied().unwrap_or((1, 1));
                self.warnings.warn(
                    format!("undefined {name}"),
                    line,
                    column,
                    format!("material \"{name}\" is not defined by any mtllib; its faces get none"),
                );
            }
            if known.is_some() {
                merged.push(part);
                continue;
            }
            match unnamed {
                Some(i) => {
                    let target: &mut PartFaces = &mut merged[i];
                    target.corners.extend_from_slice(&part.corners);
                    target.arities.extend_from_slice(&part.arities);
                    target.has_uvs |= part.has_uvs;
                    target.has_normals |= part.has_normals;
                }
                None => {
                    unnamed = Some(merged.len());
                    merged.push(PartFaces {
                        material: None,
                        ..part
                    });
                }
            }
        }
        for part in merged {
            let material = match &part.material {
                Some(name) => {
                    let mtl = &library[name.as_str()];
                    materials.push(mtl.clone());
                    Some(materials.len() - 1)
                }
                None => None,
            };
            let data = self.build(&part);
            parts.push(MeshPart {
                material,
                data: Arc::new(data),
            });
        }
        if parts.is_empty() {
            parts.push(MeshPart {
                material: None,
                data: Arc::new(MeshData::default()),
            });
        }
        let mut warnings = self.warnings.into_messages();
        warnings.extend(self.library_warnings);
        Ok(MeshAsset::new(parts, materials, warnings))
    }

    /// The part's vertices, shared by value, and its triangles and quads.
    fn build(&self, part: &PartFaces) -> MeshData {
        let mut mesh = MeshData::default();
        let mut index_of: HashMap<[u32; 8], u32, Xxh3DefaultBuilder> =
            HashMap::with_capacity_and_hasher(part.corners.len(), Xxh3DefaultBuilder);
        let mut start = 0usize;
        for &arity in &part.arities {
            let face = &part.corners[start..start + arity as usize];
            start += arity as usize;
            let face_normal = if part.has_normals && face.iter().any(|c| c[2] == NONE) {
                newell_normal(face.iter().map(|c| self.positions[c[0] as usize]))
            } else {
                Vec3::ZERO
            };
            let mut indices = Vec::with_capacity(face.len());
            for (k, c) in face.iter().enumerate() {
                let position = self.positions[c[0] as usize];
                let normal = match (part.has_normals, c[2]) {
                    (false, _) => Vec3::ZERO,
                    (true, NONE) => face_normal,
                    (true, n) => self.normals[n as usize],
                };
                let uv = match (part.has_uvs, c[1]) {
                    (false, _) => Vec2::ZERO,
                    (true, NONE) => default_uv(face.len(), k),
                    (true, t) => self.uvs[t as usize],
                };
                let key = [
                    position.x.to_bits(),
                    position.y.to_bits(),
                    position.z.to_bits(),
                    normal.x.to_bits(),
                    normal.y.to_bits(),
                    normal.z.to_bits(),
                    uv.x.to_bits(),
                    uv.y.to_bits(),
                ];
                let next = mesh.positions.len() as u32;
                let index = *index_of.entry(key).or_insert_with(|| {
                    mesh.positions.push(position);
                    if part.has_normals {
                        mesh.normals.push(normal);
                    }
                    if part.has_uvs {
                        mesh.uvs.push(uv);
                    }
                    next
                });
                indices.push(index);
            }
            mesh.push_polygon(&indices);
        }
        mesh
    }

    /// The materials of every `mtllib`, by name; the first library to define a name wins.
    fn read_libraries(&mut self) -> Result<HashMap<String, FileMaterial>, IoError> {
        let mut library = HashMap::new();
        let folder = self.path.parent().unwrap_or(Path::new("")).to_path_buf();
        for (name, line, column) in std::mem::take(&mut self.libraries) {
            let mtl_path = folder.join(&name);
            let file = match File::open(&mtl_path) {
                Ok(file) => file,
                Err(e) => {
                    self.warnings.warn(
                        format!("mtllib {name}"),
                        line,
                        column,
                        format!(
                            "cannot read the material library \"{name}\" ({}): its materials are missing",
                            super::error::describe_os_error(&e)
                        ),
                    );
                    continue;
                }
            };
            let mut reader = BufReader::new(file);
            let (materials, warnings) = read_mtl(&mut reader, &mtl_path)?;
            self.library_warnings.extend(warnings);
            for material in materials {
                library.entry(material.name.clone()).or_insert(material);
            }
        }
        Ok(library)
    }
}

fn check_count(path: &Path, line: usize, count: usize) -> Result<(), IoError> {
    if count >= NONE as usize {
        return Err(at(
            path,
            line,
            1,
            "more than 2^32 - 1 vertices, texture coordinates or normals",
        ));
    }
    Ok(())
}

/// A polygon's normal by Newell's method, twice its area long.
fn newell(corners: impl Iterator<Item = Vec3> + Clone) -> Vec3 {
    let next = corners.clone().cycle().skip(1);
    corners.zip(next).fold(Vec3::ZERO, |n, (a, b)| {
        n + Vec3::new(
            (a.y - b.y) * (a.z + b.z),
            (a.z - b.z) * (a.x + b.x),
            (a.x - b.x) * (a.y + b.y),
        )
    })
}

/// Twice the area of a polygon: zero for a degenerate one, NaN or infinite for corners too far
/// out.
fn newell_area(corners: impl Iterator<Item = Vec3> + Clone) -> f32 {
    newell(corners).length()
}

/// The unit normal of a polygon; zero for a degenerate one.
fn newell_normal(corners: impl Iterator<Item = Vec3> + Clone) -> Vec3 {
    newell(corners).normalize_or_zero()
}

/// The texture coordinate a corner without one gets: the face's own parameterisation, as the
/// renderer uses for a mesh without UVs.
fn default_uv(corners: usize, k: usize) -> Vec2 {
    const TRIANGLE: [Vec2; 3] = [Vec2::ZERO, Vec2::X, Vec2::Y];
    const QUAD: [Vec2; 4] = [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y];
    match corners {
        3 => TRIANGLE[k],
        4 => QUAD[k],
        _ => Vec2::ZERO,
    }
}
