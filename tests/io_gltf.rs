//! glTF 2.0 in: a binary glTF written here (two meshes, three materials, an embedded PNG, a
//! mirrored child node, a camera and a point light) loads as placed meshes, Caustica
//! materials, a camera and lights; `mesh { file }` flattens it and `import` brings it into a
//! scene; malformed files are errors, not panics.

use std::path::{Path, PathBuf};

use caustica::io::{load_gltf, load_mesh_asset, AssetCache};
use caustica::lang::SceneFile;
use caustica::scene::{LightKind, MaterialKind, MeshOrigin, Scene};
use glam::{Vec2, Vec3};

/// A `.glb` of `json` and the binary chunk `bin` (both padded to 4 bytes).
fn write_glb(path: &Path, json: &str, bin: &[u8]) {
    let mut json = json.as_bytes().to_vec();
    while json.len() % 4 != 0 {
        json.push(b' ');
    }
    let mut bin = bin.to_vec();
    while bin.len() % 4 != 0 {
        bin.push(0);
    }
    let total = 12 + 8 + json.len() + 8 + bin.len();
    let mut out = Vec::new();
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(b"JSON");
    out.extend_from_slice(&json);
    out.extend_from_slice(&(bin.len() as u32).to_le_bytes());
    out.extend_from_slice(b"BIN\0");
    out.extend_from_slice(&bin);
    std::fs::write(path, out).unwrap();
}

/// A 2×2 sRGB PNG: black, white / mid-grey 188, red.
fn png() -> Vec<u8> {
    let mut bytes = Vec::new();
    let pixels = [0u8, 0, 0, 255, 255, 255, 188, 188, 188, 255, 0, 0];
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut bytes),
        &pixels,
        2,
        2,
        image::ExtendedColorType::Rgb8,
    )
    .unwrap();
    bytes
}

fn f32s(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The test scene: mesh 0 "quad" (a unit quad in z = 0 of two triangles with normals and UVs,
/// material 0 "red": a diffuse base colour with the PNG, scaled by KHR_texture_transform);
/// mesh 1 "lamp" (the same triangles, material 1: emissive, strength 4; and a second primitive
/// of material 2: a metal). Node 0 places "quad" at z = −2 and its child node 1 mirrors it in
/// x; node 2 places "lamp" at y = 3; node 3 is a camera at (0, 1, 5); node 4 a point light of
/// 683 cd.
fn test_glb(dir: &Path) -> PathBuf {
    let positions = f32s(&[0., 0., 0., 1., 0., 0., 1., 1., 0., 0., 1., 0.]);
    let normals = f32s(&[0., 0., 1., 0., 0., 1., 0., 0., 1., 0., 0., 1.]);
    let uvs = f32s(&[0., 1., 1., 1., 1., 0., 0., 0.]);
    let indices: Vec<u8> = [0u16, 1, 2, 0, 2, 3]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    let image = png();
    let mut bin = Vec::new();
    let mut views = Vec::new();
    for chunk in [&positions, &normals, &uvs, &indices, &image] {
        views.push(format!(
            "{{\"buffer\":0,\"byteOffset\":{},\"byteLength\":{}}}",
            bin.len(),
            chunk.len()
        ));
        bin.extend_from_slice(chunk);
        while bin.len() % 4 != 0 {
            bin.push(0);
        }
    }
    let json = format!(
        r#"{{
  "asset": {{"version": "2.0"}},
  "extensionsUsed": ["KHR_lights_punctual", "KHR_materials_emissive_strength", "KHR_texture_transform"],
  "scene": 0,
  "scenes": [{{"nodes": [0, 2, 3, 4]}}],
  "nodes": [
    {{"mesh": 0, "translation": [0, 0, -2], "children": [1]}},
    {{"mesh": 0, "scale": [-1, 1, 1]}},
    {{"mesh": 1, "translation": [0, 3, 0]}},
    {{"camera": 0, "translation": [0, 1, 5]}},
    {{"translation": [0, 2, 0], "extensions": {{"KHR_lights_punctual": {{"light": 0}}}}}}
  ],
  "cameras": [{{"type": "perspective", "perspective": {{"yfov": 0.6, "znear": 0.1}}}}],
  "extensions": {{"KHR_lights_punctual": {{"lights": [{{"type": "point", "color": [1, 0.5, 0.25], "intensity": 683}}]}}}},
  "meshes": [
    {{"name": "quad", "primitives": [{{"attributes": {{"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2}}, "indices": 3, "material": 0}}]}},
    {{"name": "lamp", "primitives": [
      {{"attributes": {{"POSITION": 0}}, "indices": 3, "material": 1}},
      {{"attributes": {{"POSITION": 0}}, "indices": 3, "material": 2}}
    ]}}
  ],
  "materials": [
    {{"name": "red", "pbrMetallicRoughness": {{"baseColorFactor": [0.8, 0.1, 0.1, 1], "metallicFactor": 0, "roughnessFactor": 0.5,
      "baseColorTexture": {{"index": 0, "extensions": {{"KHR_texture_transform": {{"scale": [2, 2], "offset": [0.25, 0]}}}}}}}}}},
    {{"name": "glow", "emissiveFactor": [1, 0.5, 0.25], "extensions": {{"KHR_materials_emissive_strength": {{"emissiveStrength": 4}}}}}},
    {{"name": "gold", "pbrMetallicRoughness": {{"baseColorFactor": [1, 0.8, 0.3, 1], "metallicFactor": 1, "roughnessFactor": 0.4,
      "baseColorTexture": {{"index": 0}}}}}}
  ],
  "textures": [{{"source": 0}}],
  "images": [{{"bufferView": 4, "mimeType": "image/png"}}],
  "accessors": [
    {{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3", "min": [0, 0, 0], "max": [1, 1, 0]}},
    {{"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"}},
    {{"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC2"}},
    {{"bufferView": 3, "componentType": 5123, "count": 6, "type": "SCALAR"}}
  ],
  "bufferViews": [{}],
  "buffers": [{{"byteLength": {}}}]
}}"#,
        views.join(","),
        bin.len()
    );
    let path = dir.join("scene.glb");
    write_glb(&path, &json, &bin);
    path
}

#[test]
fn a_binary_gltf_loads_its_placements_materials_camera_and_lights() {
    let dir = tempfile::tempdir().unwrap();
    let asset = load_gltf(&test_glb(dir.path())).unwrap();
    assert_eq!(asset.mesh_names, ["quad", "lamp"]);
    // Node 1's transform is its parent's times its own.
    let placed: Vec<(usize, Vec3)> = asset
        .placements
        .iter()
        .map(|p| (p.mesh, p.transform.transform_point3(Vec3::X)))
        .collect();
    assert_eq!(
        placed,
        [
            (0, Vec3::new(1.0, 0.0, -2.0)),
            (0, Vec3::new(-1.0, 0.0, -2.0)),
            (1, Vec3::new(1.0, 3.0, 0.0))
        ]
    );
    let quad = &asset.meshes[0];
    assert_eq!(quad.parts.len(), 1);
    // UVs flipped to v up: the first vertex's (0, 1) becomes (0, 0).
    assert_eq!(quad.parts[0].data.uvs[0], Vec2::new(0.0, 0.0));
    assert_eq!(quad.parts[0].data.triangles, [[0, 1, 2], [0, 2, 3]]);
    let kinds: Vec<&MaterialKind> = quad.materials.iter().map(|m| &m.kind).collect();
    // A non-metal is a plastic: the base colour under a coat of index 1.5 and the material's
    // roughness.
    assert_eq!(
        kinds[0],
        &MaterialKind::plastic(Vec3::new(0.8, 0.1, 0.1), None, 1.5, 0.5)
    );
    assert_eq!(
        kinds[1],
        &MaterialKind::Emissive {
            radiance: Vec3::new(4.0, 2.0, 1.0),
            samples: 1
        }
    );
    // A metal is a conductor whose normal-incidence reflectance is its base colour, rough as
    // the file says.
    let MaterialKind::Conductor {
        eta, k, roughness, ..
    } = *kinds[2]
    else {
        panic!("a metal is a conductor: {:?}", kinds[2])
    };
    assert_eq!(roughness, 0.4);
    // Its base-colour texture comes along, to tint it.
    assert!(quad.materials[2].texture_image.is_some());
    let normal = caustica::cpu::optics::conductor_fresnel(1.0, eta, k);
    assert!(
        (normal - Vec3::new(0.999, 0.8, 0.3)).abs().max_element() < 1e-4,
        "{normal}"
    );
    let red = &quad.materials[0];
    let image = red.texture_image.as_ref().expect("the embedded PNG");
    assert_eq!((image.width, image.height), (2, 2));
    // sRGB 188 is linear 0.5 (to three places); white stays 1.
    assert!(
        (image.texels[2].x - 0.5029).abs() < 1e-3,
        "{}",
        image.texels[2]
    );
    assert_eq!(image.texels[1], Vec3::ONE);
    // glTF's offset 0.25 along u, and (1 − 2 − 0) along Caustica's upward v.
    assert_eq!(red.texture_scale, Vec2::new(2.0, 2.0));
    assert_eq!(red.texture_offset, Vec2::new(0.25, -1.0));
    assert!(red
        .texture_file
        .as_ref()
        .unwrap()
        .ends_with("scene.glb#image0"));
    // The lamp mesh's two primitives are two parts.
    assert_eq!(asset.meshes[1].parts.len(), 2);
    let camera = asset.camera.as_ref().expect("the camera node");
    assert_eq!(camera.position, Vec3::new(0.0, 1.0, 5.0));
    assert_eq!(camera.look_at, Vec3::new(0.0, 1.0, 4.0));
    assert!((camera.fov_deg - 0.6f32.to_degrees()).abs() < 1e-4);
    // 683 cd of colour (1, ½, ¼) is 1 W/sr of it: 4π W.
    let four_pi = 4.0 * std::f32::consts::PI;
    assert_eq!(
        asset.lights,
        [LightKind::Point {
            position: Vec3::new(0.0, 2.0, 0.0),
            power: Vec3::new(1.0, 0.5, 0.25) * four_pi
        }]
    );
    // Roughness is modelled now: nothing is said about it.
    assert!(
        !asset.warnings.iter().any(|w| w.contains("rough")),
        "{:?}",
        asset.warnings
    );
}

#[test]
fn a_gltf_mesh_file_is_its_placed_meshes_in_world_space_split_by_material() {
    let dir = tempfile::tempdir().unwrap();
    let asset = load_mesh_asset(&test_glb(dir.path())).unwrap();
    // red (two placements of the quad), glow and gold.
    assert_eq!(asset.parts.len(), 3);
    let red = &asset.parts[0].data;
    assert_eq!(red.positions.len(), 8);
    assert_eq!(red.positions[1], Vec3::new(1.0, 0.0, -2.0));
    assert_eq!(red.positions[5], Vec3::new(-1.0, 0.0, -2.0));
    // The mirrored copy's winding is reversed, so its faces still front +z.
    let normal = |t: [u32; 3]| {
        let [a, b, c] = t.map(|v| red.positions[v as usize]);
        (b - a).cross(c - a).normalize()
    };
    assert_eq!(normal(red.triangles[0]), Vec3::Z);
    assert_eq!(normal(red.triangles[2]), Vec3::Z);
    assert_eq!(asset.parts[1].data.positions[2], Vec3::new(1.0, 4.0, 0.0));
}

fn scene_with(dir: &Path, text: &str) -> Scene {
    let path = dir.join("scene.csc");
    std::fs::write(&path, text).unwrap();
    let file = SceneFile::load(&path).unwrap();
    file.eval(1, &AssetCache::new())
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn importing_a_gltf_brings_its_meshes_instances_materials_camera_and_lights() {
    let dir = tempfile::tempdir().unwrap();
    test_glb(dir.path());
    let scene = scene_with(
        dir.path(),
        "import \"scene.glb\"\nfilm { resolution 16 12 spp 1 }",
    );
    let names: Vec<&str> = scene.meshes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "scene.glb/quad",
            "scene.glb/lamp/glow",
            "scene.glb/lamp/gold"
        ]
    );
    assert!(matches!(scene.meshes[0].origin, MeshOrigin::File(_)));
    // Two placements of the quad, and the lamp's two parts.
    assert_eq!(scene.instances.len(), 4);
    assert_eq!(scene.camera.position, Vec3::new(0.0, 1.0, 5.0));
    // The point light, and the emissive part as a mesh light.
    assert!(matches!(scene.lights[0].kind, LightKind::Point { .. }));
    assert!(matches!(scene.lights[1].kind, LightKind::Mesh { .. }));
    let red = scene
        .materials
        .iter()
        .find(|m| m.name == "scene.glb/quad/red")
        .expect("the quad's material");
    let MaterialKind::Plastic {
        texture: Some(t), ..
    } = red.kind
    else {
        panic!("{:?}", red.kind)
    };
    assert_eq!(scene.textures[t as usize].uv_scale, Vec2::splat(2.0));
    // The metal's base-colour texture is its conductor's texture.
    let gold = scene
        .materials
        .iter()
        .find(|m| m.name == "scene.glb/lamp/gold")
        .expect("the lamp's metal");
    assert!(
        matches!(
            gold.kind,
            MaterialKind::Conductor {
                texture: Some(_),
                ..
            }
        ),
        "{:?}",
        gold.kind
    );
    // A camera block of the scene wins over the file's.
    let own = scene_with(
        dir.path(),
        "camera { position 0 0 9 }\nimport \"scene.glb\"\nfilm { resolution 16 12 spp 1 }",
    );
    assert_eq!(own.camera.position, Vec3::new(0.0, 0.0, 9.0));
    // The imported scene renders.
    let prepared = caustica::prepare(&scene).unwrap();
    let frame = caustica::cpu::render_whitted(&scene, &prepared, &Default::default());
    assert!(frame.color.iter().all(|c| c.is_finite()));
    assert!(frame.color.iter().any(|c| c.max_element() > 0.0));
}

#[test]
fn malformed_gltf_files_are_errors_that_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = test_glb(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    // Cut short: the binary chunk is missing its end.
    let cut = dir.path().join("cut.glb");
    std::fs::write(&cut, &bytes[..bytes.len() - 40]).unwrap();
    let e = load_gltf(&cut).unwrap_err().to_string();
    assert!(e.contains("cut.glb"), "{e}");
    // An accessor that claims more vertices than its buffer view holds.
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let json_start = text.find('{').unwrap();
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let json = &text[json_start..json_start + json_len];
    let bin_start = 20 + json_len + 8;
    let bad = json.replacen(
        "\"count\": 4, \"type\": \"VEC3\", \"min\"",
        "\"count\": 4000, \"type\": \"VEC3\", \"min\"",
        1,
    );
    assert_ne!(bad, json);
    let over = dir.path().join("over.glb");
    write_glb(&over, &bad, &bytes[bin_start..]);
    let e = load_gltf(&over).unwrap_err().to_string();
    assert!(e.contains("over.glb") && e.contains("outside"), "{e}");
    // Not glTF at all.
    let junk = dir.path().join("junk.gltf");
    std::fs::write(&junk, "{ not json").unwrap();
    assert!(load_gltf(&junk)
        .unwrap_err()
        .to_string()
        .contains("junk.gltf"));
    // In a scene, the error points at the import's file string.
    let scene = dir.path().join("bad.csc");
    std::fs::write(&scene, "import \"junk.gltf\"").unwrap();
    let file = SceneFile::load(&scene).unwrap();
    let e = file.eval(1, &AssetCache::new()).unwrap_err().to_string();
    assert!(
        e.contains("bad.csc:1:8: error: cannot load scene file \"junk.gltf\""),
        "{e}"
    );
}
