graph [
  name "Petersen Graph"
  node [
    id 0
    label "r0"
  ]
  node [
    id 1
    label "r1"
  ]
  node [
    id 2
    label "r2"
  ]
  node [
    id 3
    label "r3"
  ]
  node [
    id 4
    label "r4"
  ]
  node [
    id 5
    label "r5"
  ]
  node [
    id 6
    label "r6"
  ]
  node [
    id 7
    label "r7"
  ]
  node [
    id 8
    label "r8"
  ]
  node [
    id 9
    label "r9"
  ]
  edge [
    source 0
    target 1
  ]
  edge [
    source 0
    target 4
  ]
  edge [
    source 0
    target 5
  ]
  edge [
    source 1
    target 2
  ]
  edge [
    source 1
    target 6
  ]
  edge [
    source 2
    target 3
  ]
  edge [
    source 2
    target 7
  ]
  edge [
    source 3
    target 4
  ]
  edge [
    source 3
    target 8
  ]
  edge [
    source 4
    target 9
  ]
  edge [
    source 5
    target 7
  ]
  edge [
    source 5
    target 8
  ]
  edge [
    source 6
    target 8
  ]
  edge [
    source 6
    target 9
  ]
  edge [
    source 7
    target 9
  ]
]
