# Dry run of a Vivado build under plain tclsh: every command Vivado would run (any command this
# interpreter does not know, plus file copies) is recorded as one JSON array per line in the
# file named by the environment variable VTA_DRYRUN_LOG, and answers with its arguments joined
# (so [get_bd_pins ps/FCLK_CLK0] stands for the pin ps/FCLK_CLK0), or with "1.0" for
# get_property, so the script's own checks pass. Usage: tclsh dryrun.tcl SCRIPT ARGS...
set vta_dryrun_log [open $env(VTA_DRYRUN_LOG) w]

proc vta_json {text} {
    set escaped [string map {\\ \\\\ \" \\\" \n \\n \t \\t} $text]
    return "\"$escaped\""
}

proc vta_record {words} {
    global vta_dryrun_log
    set items {}
    foreach word $words {
        lappend items [vta_json $word]
    }
    puts $vta_dryrun_log "\[[join $items {, }]\]"
}

proc unknown {args} {
    vta_record $args
    if {[lindex $args 0] eq "get_property"} {
        return 1.0
    }
    if {[llength $args] == 1} {
        return [lindex $args 0]
    }
    return [join [lrange $args 1 end] " "]
}

rename file vta_tcl_file
# The dry run records file copies instead of making them (the build's outputs do not exist).
# tclint-disable-next-line redefined-builtin
proc file {subcommand args} {
    if {$subcommand in {copy delete mkdir}} {
        vta_record [concat [list file $subcommand] $args]
        return ""
    }
    return [vta_tcl_file $subcommand {*}$args]
}

set script [lindex $argv 0]
set argv [lrange $argv 1 end]
set argc [llength $argv]
source $script
close $vta_dryrun_log
