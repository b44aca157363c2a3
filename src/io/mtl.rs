//! MTL material libraries, translated to Caustica materials (`docs/language.md`, "Materials
//! from OBJ files"). What a Caustica material cannot say is warned about once, with its line.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use glam::{Vec2, Vec3};

use super::wavefront_text::{at, number, rest_of_line, words, Lines, Warnings};
use super::IoError;
use crate::scene::{
    conductor_from_reflectance, rough_alpha, FileMaterial, FresnelMode, MaterialKind,
};

/// What an MTL `newmtl` block says, with the line of each statement that decides the material.
#[derive(Default)]
struct MtlBlock {
    name: String,
    kd: Option<Vec3>,
    ks: Option<(Vec3, usize)>,
    ke: Option<Vec3>,
    tf: Option<Vec3>,
    ni: Option<f32>,
    /// The specular exponent, which sets a reflective material's roughness.
    ns: Option<f32>,
    d: Option<(f32, usize)>,
    illum: Option<(i64, usize)>,
    map_kd: Option<PathBuf>,
    map_scale: Vec2,
    map_offset: Vec2,
}

/// Reads an MTL file: its materials, translated, and warnings for what it says that a Caustica
/// material cannot.
pub(super) fn read_mtl(
    reader: &mut dyn BufRead,
    path: &Path,
) -> Result<(Vec<FileMaterial>, Vec<String>), IoError> {
    let mut warnings = Warnings::new(path);
    let mut blocks: Vec<MtlBlock> = Vec::new();
    let mut lines = Lines::new(reader, path);
    let folder = path.parent().unwrap_or(Path::new(""));
    let mut text = String::new();
    while let Some(line) = lines.next_line(&mut text)? {
        let mut w = words(&text);
        let Some((column, keyword)) = w.next() else {
            continue;
        };
        if keyword == "newmtl" {
            let name = rest_of_line(&text);
            if name.is_empty() {
                return Err(at(path, line, column, "\"newmtl\" needs a name"));
            }
            blocks.push(MtlBlock {
                name: name.to_string(),
                map_scale: Vec2::ONE,
                ..MtlBlock::default()
            });
            continue;
        }
        let Some(block) = blocks.last_mut() else {
            return Err(at(
                path,
                line,
                column,
                format!("\"{keyword}\" comes before any \"newmtl\""),
            ));
        };
        let color = |w: &mut dyn Iterator<Item = (usize, &str)>| -> Result<Vec3, IoError> {
            let words: Vec<(usize, &str)> = w.collect();
            match words.as_slice() {
                [] => Err(at(
                    path,
                    line,
                    column,
                    format!("\"{keyword}\" needs a colour"),
                )),
                [(c, first), ..] if first.parse::<f32>().is_err() => Err(at(
                    path,
                    line,
                    *c,
                    format!("\"{keyword} {first}\" is not supported: give an RGB colour"),
                )),
                [r] => Ok(Vec3::splat(number(path, line, *r)?)),
                [r, g, b, ..] => Ok(Vec3::new(
                    number(path, line, *r)?,
                    number(path, line, *g)?,
                    number(path, line, *b)?,
                )),
                [_, (c, _)] => Err(at(
                    path,
                    line,
                    *c,
                    format!("\"{keyword}\" needs 1 or 3 numbers"),
                )),
            }
        };
        match keyword {
            "Kd" => block.kd = Some(color(&mut w)?),
            "Ks" => block.ks = Some((color(&mut w)?, line)),
            "Ke" => block.ke = Some(color(&mut w)?),
            "Tf" => block.tf = Some(color(&mut w)?),
            // Ambient colour has no meaning in a physically based renderer.
            "Ka" => {
                color(&mut w)?;
            }
            "Ns" => block.ns = Some(one_number(path, line, column, keyword, &mut w)?),
            "Ni" => block.ni = Some(one_number(path, line, column, keyword, &mut w)?),
            "d" => block.d = Some((one_number(path, line, column, keyword, &mut w)?, line)),
            "Tr" => block.d = Some((1.0 - one_number(path, line, column, keyword, &mut w)?, line)),
            "illum" => {
                let value = one_number(path, line, column, keyword, &mut w)?;
                block.illum = Some((value as i64, line));
            }
            "map_Kd" => {
                let statement = texture_file(&text);
                if statement.file.is_empty() {
                    return Err(at(path, line, column, "\"map_Kd\" needs a file name"));
                }
                if let Some(scale) = statement.scale {
                    if scale.x == 0.0 || scale.y == 0.0 {
                        return Err(at(path, line, column, "\"map_Kd -s\" must not be zero"));
                    }
                    block.map_scale = scale;
                }
                block.map_offset = statement.offset.unwrap_or(Vec2::ZERO);
                if let Some((c, option)) = statement.unsupported {
                    warnings.warn(
                        format!("map option {option}"),
                        line,
                        c,
                        format!("the texture option \"{option}\" is not supported and was ignored"),
                    );
                }
                block.map_kd = Some(folder.join(statement.file));
            }
            other => warnings.warn(
                format!("statement {other}"),
                line,
                column,
                format!("the MTL statement \"{other}\" is not supported and was ignored"),
            ),
        }
    }
    let materials = blocks
        .into_iter()
        .map(|block| translate(block, &mut warnings))
        .collect();
    Ok((materials, warnings.into_messages()))
}

fn one_number<'a>(
    path: &Path,
    line: usize,
    column: usize,
    keyword: &str,
    w: &mut impl Iterator<Item = (usize, &'a str)>,
) -> Result<f32, IoError> {
    match w.next() {
        Some(word) => number(path, line, word),
        None => Err(at(
            path,
            line,
            column,
            format!("\"{keyword}\" needs a number"),
        )),
    }
}

/// A texture statement's file and options.
struct TextureStatement<'t> {
    file: &'t str,
    /// `-s u v`: the UV scale.
    scale: Option<Vec2>,
    /// `-o u v`: the UV offset.
    offset: Option<Vec2>,
    /// The first option other than those two, with its column.
    unsupported: Option<(usize, &'t str)>,
}

/// The file name of a texture statement, after its options (`-s 2 2 1 file.png`), with the UV
/// scale and offset options read and the first other option noted.
fn texture_file(text: &str) -> TextureStatement<'_> {
    let mut statement = TextureStatement {
        file: "",
        scale: None,
        offset: None,
        unsupported: None,
    };
    let mut rest = rest_of_line(text);
    let offset = |s: &str| {
        text[..s.as_ptr() as usize - text.as_ptr() as usize]
            .chars()
            .count()
            + 1
    };
    while rest.starts_with('-') {
        let mut parts = rest.splitn(2, char::is_whitespace);
        let option = parts.next().unwrap_or_default();
        if !matches!(option, "-s" | "-o") {
            statement.unsupported.get_or_insert((offset(rest), option));
        }
        rest = parts.next().unwrap_or_default().trim_start();
        // Options take one word, except -o, -s, -t (up to three numbers) and -mm (two).
        let most = match option {
            "-o" | "-s" | "-t" => 3,
            "-mm" => 2,
            _ => 1,
        };
        let mut values = Vec::with_capacity(most);
        for taken in 0..most {
            let mut parts = rest.splitn(2, char::is_whitespace);
            let word = parts.next().unwrap_or_default();
            let value = word.parse::<f32>();
            if taken > 0 && value.is_err() {
                break;
            }
            values.extend(value.ok().filter(|v| v.is_finite()));
            rest = parts.next().unwrap_or_default().trim_start();
        }
        // u, then v (by default 1 for a scale, 0 for an offset); w is for 3D textures.
        let uv = |default_v: f32| {
            let u = *values.first()?;
            Some(Vec2::new(u, values.get(1).copied().unwrap_or(default_v)))
        };
        match option {
            "-s" => statement.scale = uv(1.0),
            "-o" => statement.offset = uv(0.0),
            _ => {}
        }
    }
    statement.file = rest.trim();
    statement
}

/// The Caustica material an MTL block describes (see `docs/language.md`, "Materials from OBJ
/// files").
fn translate(block: MtlBlock, warnings: &mut Warnings) -> FileMaterial {
    let name = block.name.clone();
    let illum = block.illum.map(|(i, _)| i);
    let clamp01 = |c: Vec3| c.clamp(Vec3::ZERO, Vec3::ONE);
    // Blender's reading of the specular exponent: roughness 1 − √(Ns / 1000).
    let roughness = block
        .ns
        .map_or(0.0, |ns| 1.0 - (ns.clamp(0.0, 1000.0) / 1000.0).sqrt());
    let kind;
    let mut texture_file = None;
    if let Some(radiance) = block.ke.filter(|ke| ke.max_element() > 0.0) {
        kind = MaterialKind::Emissive {
            radiance: radiance.max(Vec3::ZERO),
            samples: 1,
        };
    } else if matches!(illum, Some(4 | 6 | 7))
        || (block.ni.is_some() && block.d.is_some_and(|(d, _)| d < 1.0))
    {
        let ior = block.ni.filter(|&n| n > 0.0).unwrap_or(1.5);
        kind = MaterialKind::Dielectric {
            ior,
            tint: clamp01(block.tf.unwrap_or(Vec3::ONE)),
            fresnel: FresnelMode::Exact,
            roughness: 0.0,
        };
    } else if matches!(illum, Some(3 | 5)) {
        let reflectance = clamp01(block.ks.map_or(Vec3::ONE, |(ks, _)| ks));
        kind = if rough_alpha(roughness).is_some() {
            let (eta, k) = conductor_from_reflectance(reflectance);
            MaterialKind::Conductor {
                eta,
                k,
                tint: Vec3::ONE,
                roughness,
                texture: None,
            }
        } else {
            MaterialKind::Mirror { reflectance }
        };
    } else {
        if let Some((d, line)) = block.d.filter(|&(d, _)| d < 1.0) {
            warnings.warn(
                format!("opacity {name}"),
                line,
                1,
                format!(
                    "material \"{name}\": partial opacity (d = {d}) is not supported; it is opaque"
                ),
            );
        }
        texture_file = block.map_kd.clone();
        let albedo = clamp01(block.kd.unwrap_or(Vec3::splat(0.8)));
        let glossy = block
            .ks
            .filter(|(ks, _)| ks.max_element() > 0.0 && illum != Some(1) && illum != Some(0));
        kind = match glossy {
            // A glossy layer: a plastic whose coat's roughness comes from Ns as for a
            // reflective material, of index Ni (1.5 without one above 1).
            Some((ks, line)) => {
                if ks.max_element() < 1.0 {
                    warnings.warn(
                        format!("glossy {name}"),
                        line,
                        1,
                        format!("material \"{name}\": the strength of a glossy layer (Ks) is not modelled; its coat reflects as a dielectric's Fresnel term says"),
                    );
                }
                MaterialKind::plastic(
                    albedo,
                    None,
                    block.ni.filter(|&n| n > 1.0).unwrap_or(1.5),
                    roughness,
                )
            }
            None => MaterialKind::Diffuse {
                albedo,
                texture: None,
            },
        };
    }
    FileMaterial {
        name,
        kind,
        texture_file,
        texture_scale: block.map_scale,
        texture_offset: block.map_offset,
        texture_image: None,
    }
}
