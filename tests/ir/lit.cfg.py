# lit configuration for Tessera's IR and CLI tests (before/after IR with FileCheck).
import os
import lit.formats

config.name = "tessera"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".tsr", ".test"]
config.test_source_root = os.path.dirname(__file__)
build = lit_config.params.get("build_dir")
if not build:
    lit_config.fatal("pass --param build_dir=<cmake build dir>")
config.test_exec_root = os.path.join(build, "lit")

llvm_bin = lit_config.params.get("llvm_bin", "/usr/lib/llvm-14/bin")
config.environment["PATH"] = os.pathsep.join([llvm_bin, os.environ.get("PATH", "")])
config.environment["TESSERA_CACHE_DIR"] = os.path.join(build, "test-cache")
config.environment["TESSERA_NUM_THREADS"] = "2"
config.substitutions.append(("%tessera", os.path.join(build, "tessera")))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
config.substitutions.append(("%scripts", os.path.join(os.path.dirname(os.path.dirname(config.test_source_root)), "scripts")))
config.substitutions.append(("%build", build))
config.excludes = ["Inputs"]
