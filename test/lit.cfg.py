# lit configuration for Nova's FileCheck tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "NOVA"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.nova_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "python", "Inputs"]
config.substitutions.append(("%nova_src", config.nova_source_dir))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.nova_tools_dir, config.llvm_tools_dir]
tools = ["nova-opt", "nova-translate", ToolSubst("FileCheck", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, tool_dirs)
