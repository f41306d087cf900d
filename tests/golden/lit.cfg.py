# lit configuration for the golden tests: .pto text through `ptox opt`, checked with FileCheck.
# Run via ctest (tests/CMakeLists.txt) or: lit tests/golden --param ptox=<ptox binary>
#   [--param llvm_tools=<dir with FileCheck and not>] [--param examples=<examples dir>]
import os
import sys

import lit.formats

config.name = 'ptox-golden'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.pto']
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

ptox = lit_config.params.get('ptox')
if not ptox or not os.path.isfile(ptox):
    lit_config.fatal('pass --param ptox=<path to the ptox binary> (got %r)' % ptox)
ptox = os.path.abspath(ptox)
llvm_tools = lit_config.params.get('llvm_tools', '/usr/lib/llvm-14/bin')
examples = lit_config.params.get(
    'examples', os.path.join(config.test_source_root, '..', '..', 'examples'))

# Outputs (%t) go to the build tree next to the ptox binary, never into the source tree.
config.test_exec_root = os.path.join(os.path.dirname(ptox), 'tests', 'golden.out')

def tool(name):
    path = os.path.join(llvm_tools, name)
    if not os.path.isfile(path):
        lit_config.fatal('%s not found in %s (pass --param llvm_tools=<dir>)' % (name, llvm_tools))
    return path

# Tool names are replaced only as whole words at command positions, not inside paths.
config.substitutions.append(('%ptox', ptox))
config.substitutions.append(('%examples', os.path.abspath(examples)))
config.substitutions.append(('%python', sys.executable))
config.substitutions.append((r'(?<![\w/.-])FileCheck(?![\w/.-])', tool('FileCheck')))
config.substitutions.append((r'(?<![\w/.%-])not(?![\w/.-])', tool('not')))
config.substitutions.append((r'(?<![\w/.-])split-file(?![\w/.-])', tool('split-file')))
config.environment['PTOX_LOG_LEVEL'] = 'error'
