//! Two jobs: link settings of the `retryctl` binary, and, with the `grpc-codegen` feature, the
//! code generated from Armada's gRPC contract (`proto/`).
//!
//! Link settings: on Linux, a position-dependent executable. As a PIE it would apply ~27,000
//! dynamic relocations at every start: `validate` 27–36% slower (src/startup.rs says what else
//! the process does to start fast, and why). Only the final link changes: the objects stay
//! position-independent, so nothing else is rebuilt.
//!
//! The generated code is checked in (src/armada_api/generated/), as the completions and man
//! pages are: generating it at every build made a fresh clone compile a protobuf compiler and
//! its code generator (about 90 s of CPU, a quarter of them on the way to the first command's
//! answer: BENCHMARKS.md "Build time") to write the same 3,100 lines. `scripts/gen-grpc.sh`
//! writes it again after a change to `proto/`, and `.ci/run` checks that it is what the
//! generator writes; the test `grpc::the_generated_code_is_from_the_protos_checked_in` fails
//! when `proto/` changed since.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    link_settings();
    #[cfg(feature = "grpc-codegen")]
    if let Err(e) = codegen::generate_api() {
        panic!("generating the gRPC code from proto/submit.proto failed: {e}");
    }
}

fn link_settings() {
    if std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux") {
        println!("cargo:rustc-link-arg-bin=retryctl=-no-pie");
        // A static build (`-C target-feature=+crt-static`, scripts/release.sh): rustc links it
        // with `-static-pie`, which `-no-pie` turns into an executable that still names the
        // dynamic loader (an INTERP header): it would not start where there is no
        // /lib64/ld-linux-x86-64.so.2. `-static` makes it a static position-dependent
        // executable, with no loader and, as above, no relocations to apply at start.
        let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
        if features.split(',').any(|f| f == "crt-static") {
            println!("cargo:rustc-link-arg-bin=retryctl=-static");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gRPC code generation
//
// `proto/submit.proto` (upstream's contract trimmed to retry policies and queues) is compiled
// by protox, a protobuf compiler written in Rust, into a FileDescriptorSet, from which
// tonic-prost-build writes the Rust types and services into OUT_DIR. No `protoc` binary: the
// build needs nothing but crates, and gives the same result on every machine. Each output is
// then compared with its checked-in copy in src/armada_api/generated/ (or written there).
//
// Three outputs, included by src/armada_api/api.rs and fields.rs:
// - `server/api.rs`: the messages and the server traits, decoding requests with
//   `armada_api::codec::StrictCodec` (refuses fields the contract does not define).
// - `client/api.rs`: the clients only (over the same message types), with tonic-prost's
//   codec: a newer server's extra fields in an answer are skipped, as any protobuf reader does.
// - `fields.rs`: the field numbers of every message, for StrictCodec's check.

#[cfg(feature = "grpc-codegen")]
mod codegen {
    use std::path::PathBuf;

    const PROTO_DIR: &str = "proto";

    /// The files the generated code is written from.
    const PROTOS: [&str; 2] = ["submit.proto", "upstream/health.proto"];

    /// Where the generated code is checked in, from the package's root.
    const GENERATED: &str = "src/armada_api/generated";

    pub fn generate_api() -> Result<(), Box<dyn std::error::Error>> {
        let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
        let proto = root.join(PROTO_DIR);
        for file in PROTOS {
            println!("cargo:rerun-if-changed={}", proto.join(file).display());
        }
        println!("cargo:rerun-if-env-changed=RETRYCTL_WRITE_GENERATED");
        let out = PathBuf::from(std::env::var("OUT_DIR")?);
        let fds = protox::compile(["submit.proto"], [proto.clone(), proto.join("upstream")])?;

        let server_dir = out.join("server");
        std::fs::create_dir_all(&server_dir)?;
        let mut config = tonic_prost_build::Config::new();
        // `prost::Name` on every message: StrictCodec finds a message's fields by its name.
        config.enable_type_names();
        // Maps as BTreeMap: the model's labels are one, and the encoding is then deterministic.
        config.btree_map(["."]);
        tonic_prost_build::configure()
            .build_client(false)
            .build_server(true)
            .build_transport(false)
            .codec_path("crate::armada_api::codec::StrictCodec")
            .out_dir(&server_dir)
            .compile_fds_with_config(fds.clone(), config)?;

        // The clients over the messages generated above: the same descriptors without their
        // messages and enums, with the package mapped to the module that holds them.
        let client_dir = out.join("client");
        std::fs::create_dir_all(&client_dir)?;
        let mut services_only = fds.clone();
        for file in &mut services_only.file {
            file.message_type.clear();
            file.enum_type.clear();
        }
        tonic_prost_build::configure()
            .build_client(true)
            .build_server(false)
            .build_transport(false)
            .extern_path(".api", "crate::armada_api::api")
            .out_dir(&client_dir)
            .compile_fds(services_only)?;

        std::fs::write(out.join("fields.rs"), field_table(&fds))?;
        check_in(&root, &out)
    }

    /// Each generated file, headed by a line that says so, compared with the one checked in; with
    /// `RETRYCTL_WRITE_GENERATED=1` (scripts/gen-grpc.sh, which also records the protos' digest the
    /// tests check), written there instead.
    fn check_in(root: &std::path::Path, out: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
        let write = std::env::var_os("RETRYCTL_WRITE_GENERATED").is_some_and(|v| v == "1");
        let mut stale = Vec::new();
        for (from, to) in [
            ("server/api.rs", "server_api.rs"),
            ("client/api.rs", "client_api.rs"),
            ("fields.rs", "fields.rs"),
        ] {
            let text = format!(
            "// @generated by build.rs (`--features grpc-codegen`, scripts/gen-grpc.sh) from proto/: do not edit.\n{}",
            std::fs::read_to_string(out.join(from))?
        );
            let path = root.join(GENERATED).join(to);
            // An edit of the checked-in copy is found too, not only a change of the protos.
            println!("cargo:rerun-if-changed={}", path.display());
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                if write {
                    std::fs::write(&path, text)?;
                } else {
                    stale.push(path.display().to_string());
                }
            }
        }
        if stale.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} not what the generator writes: run scripts/gen-grpc.sh",
                stale.join(", ")
            )
            .into())
        }
    }

    /// Rust source of `MESSAGES`: every message of package `api` (nested ones and map entries
    /// included) with its fields: number, JSON name, and the index of its message type, if any.
    fn field_table(fds: &prost_types::FileDescriptorSet) -> String {
        use prost_types::field_descriptor_proto::Type;
        let mut messages = Vec::new();
        for file in fds.file.iter().filter(|f| f.package() == "api") {
            for m in &file.message_type {
                collect(".api", m, &mut messages);
            }
        }
        let index_of = |type_name: &str| messages.iter().position(|(name, _)| name == type_name);
        let mut src = String::from(
            "// Generated by build.rs from proto/submit.proto: the fields of every message of package `api`.\n\
         pub(crate) static MESSAGES: &[Message] = &[\n",
        );
        for (name, m) in &messages {
            src.push_str(&format!("    Message {{ name: {:?}, fields: &[", &name[1..]));
            for f in &m.field {
                let nested = match f.r#type() {
                    Type::Message => match index_of(f.type_name()) {
                        Some(i) => format!("Some({i})"),
                        // A message of another package (none today): its fields are not checked.
                        None => "None".to_string(),
                    },
                    _ => "None".to_string(),
                };
                src.push_str(&format!(
                    "Field {{ number: {}, name: {:?}, message: {nested} }}, ",
                    f.number(),
                    f.json_name()
                ));
            }
            src.push_str("] },\n");
        }
        src.push_str("];\n");
        src
    }

    fn collect<'a>(
        scope: &str,
        m: &'a prost_types::DescriptorProto,
        out: &mut Vec<(String, &'a prost_types::DescriptorProto)>,
    ) {
        let name = format!("{scope}.{}", m.name());
        for nested in &m.nested_type {
            collect(&name, nested, out);
        }
        out.push((name, m));
    }
}
