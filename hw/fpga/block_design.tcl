# The block design around the VTA IP, for a Zynq-7000 (ps7: PYNQ-Z1/Z2) or a Zynq UltraScale+
# (psu: Ultra96) processing system:
# - the PS's first PL clock at fclk_mhz clocks everything; proc_sys_reset holds the design in
#   reset until the PS releases it;
# - the PS master control_port reaches the accelerator's AXI4-Lite slave at control_address
#   through an interconnect (protocol conversion);
# - the accelerator's four memory masters share the PS slave memory_port (S_AXI_ACP, or
#   S_AXI_HPC0_FPD) through a SmartConnect: coherent with the CPU caches, AxCACHE 1111 from
#   the RTL (the driver still flushes and invalidates, which costs little and keeps it right
#   on a non-coherent port);
# - the accelerator's irq goes to the PS's fabric interrupt.
proc vta_block_design {opt_name} {
    upvar $opt_name opt
    set vta [create_bd_cell -type ip -vlnv vta-codesign.org:vta:$opt(top):1.0 $opt(ip_name)]
    if {$opt(ps) eq "ps7"} {
        set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7:5.5 ps]
        apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \
            -config {make_external "FIXED_IO, DDR" apply_board_preset "1"} $ps
        set_property -dict [list \
            CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ $opt(fclk_mhz) \
            CONFIG.PCW_USE_M_AXI_GP0 1 \
            CONFIG.PCW_USE_S_AXI_ACP 1 \
            CONFIG.PCW_USE_DEFAULT_ACP_USER_VAL 1 \
            CONFIG.PCW_USE_FABRIC_INTERRUPT 1 \
            CONFIG.PCW_IRQ_F2P_INTR 1] $ps
        set clock ps/FCLK_CLK0
        set reset_n ps/FCLK_RESET0_N
        set port_clocks [list ps/M_AXI_GP0_ACLK ps/S_AXI_ACP_ACLK]
        set irq_pin ps/IRQ_F2P
    } else {
        set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:zynq_ultra_ps_e:3.5 ps]
        apply_bd_automation -rule xilinx.com:bd_rule:zynq_ultra_ps_e \
            -config {apply_board_preset "1"} $ps
        set_property -dict [list \
            CONFIG.PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ $opt(fclk_mhz) \
            CONFIG.PSU__USE__M_AXI_GP0 1 \
            CONFIG.PSU__MAXIGP0__DATA_WIDTH 32 \
            CONFIG.PSU__USE__M_AXI_GP2 0 \
            CONFIG.PSU__USE__S_AXI_GP0 1 \
            CONFIG.PSU__SAXIGP0__DATA_WIDTH $opt(memory_width) \
            CONFIG.PSU__USE__IRQ0 1] $ps
        set clock ps/pl_clk0
        set reset_n ps/pl_resetn0
        set port_clocks [list ps/maxihpm0_fpd_aclk ps/saxihpc0_fpd_aclk]
        set irq_pin ps/pl_ps_irq0
    }

    set rst [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset:5.0 rst]
    set ctrl [create_bd_cell -type ip -vlnv xilinx.com:ip:axi_interconnect:2.1 ctrl_ic]
    set_property -dict [list CONFIG.NUM_SI 1 CONFIG.NUM_MI 1] $ctrl
    set mem [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect:1.0 mem_sc]
    set_property -dict [list CONFIG.NUM_SI 4 CONFIG.NUM_MI 1] $mem

    # Clock and reset
    set clocks [concat $port_clocks [list rst/slowest_sync_clk $opt(ip_name)/clk \
        ctrl_ic/ACLK ctrl_ic/S00_ACLK ctrl_ic/M00_ACLK mem_sc/aclk]]
    connect_bd_net [get_bd_pins $clock] {*}[lmap pin $clocks {get_bd_pins $pin}]
    connect_bd_net [get_bd_pins $reset_n] [get_bd_pins rst/ext_reset_in]
    connect_bd_net [get_bd_pins rst/peripheral_reset] [get_bd_pins $opt(ip_name)/rst]
    connect_bd_net [get_bd_pins rst/interconnect_aresetn] [get_bd_pins ctrl_ic/ARESETN] \
        [get_bd_pins mem_sc/aresetn]
    connect_bd_net [get_bd_pins rst/peripheral_aresetn] [get_bd_pins ctrl_ic/S00_ARESETN] \
        [get_bd_pins ctrl_ic/M00_ARESETN]
    connect_bd_net [get_bd_pins $opt(ip_name)/irq] [get_bd_pins $irq_pin]

    # Control: PS master -> interconnect -> the accelerator's registers
    connect_bd_intf_net [get_bd_intf_pins ps/$opt(control_port)] [get_bd_intf_pins ctrl_ic/S00_AXI]
    connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M00_AXI] \
        [get_bd_intf_pins $opt(ip_name)/s_axi_control]

    # Memory: the accelerator's masters -> SmartConnect -> the PS's coherent slave port
    set index 0
    foreach master {m_axi_fetch m_axi_load m_axi_compute m_axi_store} {
        connect_bd_intf_net [get_bd_intf_pins $opt(ip_name)/$master] \
            [get_bd_intf_pins [format "mem_sc/S%02d_AXI" $index]]
        incr index
    }
    connect_bd_intf_net [get_bd_intf_pins mem_sc/M00_AXI] [get_bd_intf_pins ps/$opt(memory_port)]

    # Addresses: the registers at the fixed control address, all of DDR for every master
    assign_bd_address -offset $opt(control_address) -range 4K \
        -target_address_space [get_bd_addr_spaces ps/Data] \
        [get_bd_addr_segs $opt(ip_name)/s_axi_control/reg0]
    foreach master {m_axi_fetch m_axi_load m_axi_compute m_axi_store} {
        assign_bd_address -target_address_space [get_bd_addr_spaces $opt(ip_name)/$master] \
            [get_bd_addr_segs ps/$opt(memory_port)/*DDR*]
    }
}
