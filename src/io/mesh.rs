//! Meshes in: OBJ with its MTL materials ([`super::obj`]) and PLY (via `ply-rs-bw`, ascii or
//! binary), each optionally gzip-compressed, and glTF's placed meshes ([`super::gltf`]).
//!
//! Triangles stay triangles and four-sided faces stay quads (they may become VD patches);
//! polygons with more sides are split into triangle fans. Faces with fewer than three corners
//! (points and lines) are skipped. A PLY file's normals and texture coordinates are kept when
//! every vertex has them.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use glam::{Vec2, Vec3};
use ply_rs_bw::parser::{Parser, Reader};
use ply_rs_bw::ply::{ElementDef, Header, Property, PropertyAccess, PropertyAccessResult};

use super::IoError;
use crate::scene::{FaceCounts, MeshAsset, MeshData};

/// Size of the read buffer; large meshes are tens of megabytes.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Loads the geometry of an `.obj`, `.ply`, `.obj.gz` or `.ply.gz` file as one mesh (an OBJ
/// file's material parts one after another), checked with [`MeshData::validate`].
pub fn load_mesh(path: &Path) -> Result<MeshData, IoError> {
    Ok(load_mesh_asset(path)?.merged())
}

/// Loads an `.obj`, `.ply`, `.obj.gz` or `.ply.gz` file with its faces split by material (an OBJ
/// file's MTL libraries; a PLY file has one part without a material) and checks every part with
/// [`MeshData::validate`]. Gzip compression is recognised by its magic bytes. What the file
/// says that cannot be used is in [`MeshAsset::warnings`], and is logged here.
pub fn load_mesh_asset(path: &Path) -> Result<MeshAsset, IoError> {
    let format = mesh_format(path)?;
    let mut asset = match format {
        MeshFormat::Obj => super::obj::read_obj(&mut open_maybe_gzip(path)?, path)?,
        MeshFormat::Ply => MeshAsset::single(read_ply(&mut open_maybe_gzip(path)?, path)?),
        // Checked, and the file's own warnings logged, by the glTF reader.
        MeshFormat::Gltf => super::gltf::load_gltf_mesh(path)?,
    };
    for part in &asset.parts {
        part.data
            .validate()
            .map_err(|message| IoError::format(path, message))?;
    }
    // The OBJ reader names the line of the first face without an area itself; the glTF reader
    // has logged the file's own warnings.
    let unusable = unusable_faces(path, &asset.counts, format != MeshFormat::Obj);
    let own = if format == MeshFormat::Gltf {
        &[][..]
    } else {
        &asset.warnings[..]
    };
    for warning in own.iter().chain(&unusable) {
        log::warn!("{warning}");
    }
    asset.warnings.extend(unusable);
    Ok(asset)
}

/// Warnings, once per loaded file, for vertex normals of no length and (with `faces`) for
/// faces without an area. Whether nothing of the mesh can render is the scene's to say: a
/// displacement map may give its faces an area.
fn unusable_faces(path: &Path, counts: &FaceCounts, faces: bool) -> Vec<String> {
    let mut warnings = Vec::new();
    let file = path.display();
    if counts.unusable_normals > 0 {
        warnings.push(format!(
            "{file}: {} of its {} vertex normals are zero or not finite: where they leave no \
             normal, the face's own stands in",
            counts.unusable_normals, counts.normals
        ));
    }
    if faces && counts.without_area > 0 && !counts.nothing_renders() {
        warnings.push(format!(
            "{file}: {} of its {} faces have no area (collinear or repeated corners): they \
             render as nothing unless displaced",
            counts.without_area, counts.faces
        ));
    }
    warnings
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MeshFormat {
    Obj,
    Ply,
    Gltf,
}

/// The format named by the file extension, ignoring a final `.gz`.
fn mesh_format(path: &Path) -> Result<MeshFormat, IoError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if name.ends_with(".obj") {
        Ok(MeshFormat::Obj)
    } else if name.ends_with(".ply") {
        Ok(MeshFormat::Ply)
    } else if name.ends_with(".gltf") || name.ends_with(".glb") {
        Ok(MeshFormat::Gltf)
    } else {
        Err(IoError::UnknownFormat {
            path: path.to_path_buf(),
            message: "unknown mesh format (expected .obj, .ply, .gltf, .glb, .obj.gz or .ply.gz)"
                .into(),
        })
    }
}

/// Opens `path` for buffered reading, decompressing it on the fly when it starts with the gzip
/// magic bytes.
pub(crate) fn open_maybe_gzip(path: &Path) -> Result<Box<dyn BufRead>, IoError> {
    let file = File::open(path).map_err(|e| IoError::read(path, e))?;
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, file);
    let head = reader.fill_buf().map_err(|e| IoError::read(path, e))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        let decoder = flate2::bufread::MultiGzDecoder::new(reader);
        Ok(Box::new(BufReader::with_capacity(
            READ_BUFFER_BYTES,
            Capped::new(decoder, MAX_DECOMPRESSED_BYTES),
        )))
    } else {
        Ok(Box::new(reader))
    }
}

/// The most bytes a gzip-compressed mesh may decompress to: 8 GiB, several times the largest
/// scanned meshes, so that a gzip bomb ends in an error instead of running until the disk or
/// the patience runs out.
const MAX_DECOMPRESSED_BYTES: u64 = 8 << 30;

/// The longest line of a PLY header or ASCII body: 16 MiB, as an OBJ's.
const MAX_PLY_LINE_BYTES: usize = 16 << 20;

/// A stream that fails once more than `limit` bytes have come out of it.
struct Capped<R> {
    inner: R,
    limit: u64,
    read: u64,
}

impl<R> Capped<R> {
    fn new(inner: R, limit: u64) -> Self {
        Capped {
            inner,
            limit,
            read: 0,
        }
    }
}

impl<R: std::io::Read> std::io::Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.limit {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the file decompresses to more than {} GiB",
                    self.limit >> 30
                ),
            ));
        }
        Ok(n)
    }
}

/// A buffered stream that fails on a line longer than `max_line` bytes while `text` is set (a
/// PLY header, or its body when it is ASCII); binary data passes whatever its bytes.
struct LineCapped<'t, R> {
    inner: R,
    max_line: usize,
    /// Bytes since the last line feed.
    run: usize,
    text: &'t std::cell::Cell<bool>,
}

impl<R: BufRead> std::io::Read for LineCapped<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LineCapped<'_, R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.text.get() && self.run > self.max_line {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {} MiB", self.max_line >> 20),
            ));
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        // The bytes consumed are the front of the buffer fill_buf returned.
        if let Ok(buffer) = self.inner.fill_buf() {
            let consumed = &buffer[..amount.min(buffer.len())];
            self.run = match consumed.iter().rposition(|&b| b == b'\n') {
                Some(i) => consumed.len() - 1 - i,
                None => self.run + consumed.len(),
            };
        }
        self.inner.consume(amount);
    }
}

// ---------------------------------------------------------------------------------------------
// PLY

/// One PLY `vertex` element; the attributes the file does not declare stay zero.
#[derive(Default)]
struct PlyVertex {
    position: [f32; 3],
    normal: [f32; 3],
    uv: [f32; 2],
}

/// Which vertex property names carry which attribute component.
fn vertex_slot(name: &str) -> Option<(VertexSlot, usize)> {
    Some(match name {
        "x" => (VertexSlot::Position, 0),
        "y" => (VertexSlot::Position, 1),
        "z" => (VertexSlot::Position, 2),
        "nx" => (VertexSlot::Normal, 0),
        "ny" => (VertexSlot::Normal, 1),
        "nz" => (VertexSlot::Normal, 2),
        "u" | "s" | "texture_u" | "texture_s" => (VertexSlot::Uv, 0),
        "v" | "t" | "texture_v" | "texture_t" => (VertexSlot::Uv, 1),
        _ => return None,
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum VertexSlot {
    Position,
    Normal,
    Uv,
}

impl PropertyAccess for PlyVertex {
    fn new() -> Self {
        PlyVertex::default()
    }

    fn set_property(&mut self, name: &str, property: Property) -> PropertyAccessResult {
        let Some((slot, component)) = vertex_slot(name) else {
            return PropertyAccessResult::Ignored;
        };
        let Some(value) = property.to_f32_lossy() else {
            return PropertyAccessResult::UnsupportedType;
        };
        match slot {
            VertexSlot::Position => self.position[component] = value,
            VertexSlot::Normal => self.normal[component] = value,
            VertexSlot::Uv => self.uv[component] = value,
        }
        PropertyAccessResult::Set
    }

    fn set_float(&mut self, name: &str, value: f32) -> PropertyAccessResult {
        self.set_property(name, Property::Float(value))
    }
}

/// One PLY `face` element: its corner indices, or a note that one of them was negative.
#[derive(Default)]
struct PlyFace {
    corners: Vec<u32>,
    has_negative_index: bool,
}

impl PropertyAccess for PlyFace {
    fn new() -> Self {
        PlyFace::default()
    }

    fn set_property(&mut self, name: &str, property: Property) -> PropertyAccessResult {
        if name != "vertex_indices" && name != "vertex_index" {
            return PropertyAccessResult::Ignored;
        }
        match property.to_u32_list() {
            Some(list) => self.corners = list,
            None => match property {
                Property::ListChar(_) | Property::ListShort(_) | Property::ListInt(_) => {
                    self.has_negative_index = true
                }
                _ => return PropertyAccessResult::UnsupportedType,
            },
        }
        PropertyAccessResult::Set
    }
}

/// Elements that are neither vertices nor faces (edges, materials, ...): read and dropped.
struct IgnoredElement;

impl PropertyAccess for IgnoredElement {
    fn new() -> Self {
        IgnoredElement
    }
}

fn read_ply(reader: &mut dyn BufRead, path: &Path) -> Result<MeshData, IoError> {
    // Lines are capped in the header, and in the body when it is text.
    let text = std::cell::Cell::new(true);
    let mut capped = LineCapped {
        inner: reader,
        max_line: MAX_PLY_LINE_BYTES,
        run: 0,
        text: &text,
    };
    let mut reader = Reader::new(&mut capped as &mut dyn BufRead);
    let header = Parser::<IgnoredElement>::new()
        .read_header(&mut reader)
        .map_err(|e| IoError::format(path, format!("PLY header: {}", one_line(&e.to_string()))))?;
    text.set(matches!(header.encoding, ply_rs_bw::ply::Encoding::Ascii));
    let Some(vertex_def) = header.elements.get("vertex") else {
        return Err(IoError::format(path, "PLY header: no \"vertex\" element"));
    };
    for axis in ["x", "y", "z"] {
        if !vertex_def.properties.contains_key(axis) {
            return Err(IoError::format(
                path,
                format!("PLY header: the vertex element has no \"{axis}\" property"),
            ));
        }
    }
    let declares = |names: &[&str]| names.iter().any(|n| vertex_def.properties.contains_key(*n));
    let has_normals = declares(&["nx"]) && declares(&["ny"]) && declares(&["nz"]);
    let has_uvs = declares(&["u", "s", "texture_u", "texture_s"])
        && declares(&["v", "t", "texture_v", "texture_t"]);

    let mut mesh = MeshData::default();
    let mut skipped_faces = 0usize;
    for element in header.elements.values() {
        match element.name.as_str() {
            "vertex" => {
                let vertices = read_ply_element::<PlyVertex>(&mut reader, element, &header, path)?;
                mesh.positions = vertices
                    .iter()
                    .map(|v| Vec3::from_array(v.position))
                    .collect();
                if has_normals {
                    mesh.normals = vertices
                        .iter()
                        .map(|v| Vec3::from_array(v.normal))
                        .collect();
                }
                if has_uvs {
                    mesh.uvs = vertices.iter().map(|v| Vec2::from_array(v.uv)).collect();
                }
            }
            "face" => {
                let faces = read_ply_element::<PlyFace>(&mut reader, element, &header, path)?;
                if !faces.is_empty()
                    && !element.properties.contains_key("vertex_indices")
                    && !element.properties.contains_key("vertex_index")
                {
                    return Err(IoError::format(
                        path,
                        "PLY header: the face element has no \"vertex_indices\" list",
                    ));
                }
                mesh.triangles.reserve(faces.len());
                for (i, face) in faces.iter().enumerate() {
                    if face.has_negative_index {
                        return Err(IoError::format(
                            path,
                            format!("PLY face {i} has a negative vertex index"),
                        ));
                    }
                    if !mesh.push_polygon(&face.corners) {
                        skipped_faces += 1;
                    }
                }
            }
            _ => {
                read_ply_element::<IgnoredElement>(&mut reader, element, &header, path)?;
            }
        }
    }
    if skipped_faces > 0 {
        log::warn!(
            "{}: skipped {skipped_faces} faces with fewer than three corners",
            path.display()
        );
    }
    Ok(mesh)
}

fn read_ply_element<E: PropertyAccess>(
    reader: &mut Reader<&mut dyn BufRead>,
    element: &ElementDef,
    header: &Header,
    path: &Path,
) -> Result<Vec<E>, IoError> {
    Parser::<E>::new()
        .read_payload_for_element(reader, element, header)
        .map_err(|e| {
            IoError::format(
                path,
                format!(
                    "PLY \"{}\" data: {}",
                    element.name,
                    one_line(&e.to_string())
                ),
            )
        })
}

/// `ply-rs-bw` messages span several tab-indented lines, repeat nested parts and may end in a
/// parser's debug dump; this joins the distinct parts into one line and drops the dump.
fn one_line(message: &str) -> String {
    let message = message.replace("\n'", "'");
    let mut parts: Vec<&str> = Vec::new();
    for part in message.lines().map(str::trim) {
        if !part.is_empty() && !part.starts_with("Error: ParseError {") && !parts.contains(&part) {
            parts.push(part);
        }
    }
    parts.join(" ")
}

/// Reads a whole stream into memory; used by tests of the gzip path.
#[cfg(test)]
fn read_all(mut reader: Box<dyn BufRead>) -> Vec<u8> {
    use std::io::Read;
    let mut bytes = Vec::new();
    reader.read_to_end(&mut bytes).unwrap(); // test helper: the input is a file the test wrote
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polygons_become_triangles_quads_or_fans() {
        let mut mesh = MeshData::default();
        assert!(mesh.push_polygon(&[0, 1, 2]));
        assert!(mesh.push_polygon(&[0, 1, 2, 3]));
        assert!(mesh.push_polygon(&[0, 1, 2, 3, 4]));
        assert!(!mesh.push_polygon(&[0, 1]));
        assert_eq!(
            mesh.triangles,
            vec![[0, 1, 2], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
        );
        assert_eq!(mesh.quads, vec![[0, 1, 2, 3]]);
    }

    #[test]
    fn the_format_comes_from_the_extension_without_gz() {
        assert_eq!(
            mesh_format(Path::new("a/b.PLY.gz")).unwrap(),
            MeshFormat::Ply
        );
        assert_eq!(mesh_format(Path::new("b.obj")).unwrap(), MeshFormat::Obj);
        assert!(mesh_format(Path::new("b.stl")).is_err());
    }

    #[test]
    fn gzip_streams_are_recognised_by_their_magic_bytes() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.bin");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(b"hello").unwrap();
        std::fs::write(&path, encoder.finish().unwrap()).unwrap();
        assert_eq!(read_all(open_maybe_gzip(&path).unwrap()), b"hello");
    }

    #[test]
    fn a_capped_stream_fails_past_its_limit_and_not_before() {
        use std::io::Read;
        let mut within = Vec::new();
        Capped::new(&b"0123456789"[..], 10)
            .read_to_end(&mut within)
            .unwrap();
        assert_eq!(within, b"0123456789");
        let error = Capped::new(&b"0123456789A"[..], 10)
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidData);
    }

    #[test]
    fn a_line_capped_stream_fails_on_a_long_text_line_but_passes_binary_data() {
        use std::io::Read;
        let data = b"short\n0123456789012345\nend\n";
        let text = std::cell::Cell::new(true);
        let mut capped = LineCapped {
            inner: std::io::BufReader::with_capacity(4, &data[..]),
            max_line: 8,
            run: 0,
            text: &text,
        };
        let mut line = String::new();
        capped.read_line(&mut line).unwrap();
        assert_eq!(line, "short\n");
        line.clear();
        assert!(capped.read_line(&mut line).is_err(), "a 16-byte line");
        text.set(false);
        let mut rest = Vec::new();
        let mut binary = LineCapped {
            inner: std::io::BufReader::with_capacity(4, &data[..]),
            max_line: 8,
            run: 0,
            text: &text,
        };
        binary.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, data);
    }
}
