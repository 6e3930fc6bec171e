# traincost: regenerate every figure from one command.
#   snakemake --cores 2                                  (config/config.yaml, the paper reproduction)
#   snakemake --cores 2 --configfile config/quick.yaml   (minutes)
#   snakemake --cores 2 ablations                        (the ablations of config `ablations:`, not part of all)
from snakemake.utils import min_version

min_version("9.0")


# A --configfile replaces the default config instead of being merged into it.
if not config:

    configfile: "config/config.yaml"



include: "workflow/rules/common.smk"
include: "workflow/rules/frontend.smk"
include: "workflow/rules/monet.smk"
include: "workflow/rules/mtrain.smk"
include: "workflow/rules/tiered.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/ablations.smk"


report: "workflow/report/workflow.rst"


rule all:
    input:
        PLAN.final_outputs(),


# each study's comparison with one modelling assumption changed at a time (config `ablations:`), not part of `all`
rule ablations:
    input:
        PLAN.ablation_outputs(),
